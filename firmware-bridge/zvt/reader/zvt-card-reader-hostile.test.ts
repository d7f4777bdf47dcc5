/**
 * The ZVT driver against a terminal that sends anything the codec can carry: arbitrary
 * 04 0F fields, print lines of any bytes and attribute, any result code, any final
 * message. Whatever it sends, the driver reports one result the agent's schema accepts,
 * with receipts within the spec's limits (property test, fixed seed, few runs: each is a
 * whole payment over an in-memory line).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TransactionResult } from '../../serial/messages.js';
import { createStreamPair } from '../../serial/stream-pair.js';
import { ReaderEventLog } from '../../reader/reader-events.js';
import type { PrintLine } from '../message-types.js';
import { ZvtPtSession } from '../pt-session.js';
import { ZvtTcpChannel } from '../tcp-channel.js';
import { bmpList, PROPERTY } from '../testing/arbitraries.js';
import { openZvtCardReader } from './zvt-card-reader.js';

const printLine: fc.Arbitrary<PrintLine> = fc.record({
  type: fc.constant('print-line' as const),
  attribute: fc.integer({ min: 0, max: 255 }),
  text: fc.string({ unit: 'binary', maxLength: 60 }),
});

const hostile = fc.record({
  bmps: bmpList(10),
  lines: fc.array(printLine, { maxLength: 40 }),
  resultCode: fc.integer({ min: 0, max: 255 }),
  completes: fc.boolean(),
});

describe('ZVT driver against a hostile terminal', () => {
  it('always reports one valid result, receipts within limits (property)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'zvt-hostile-'));
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(hostile, async ({ bmps, lines, resultCode, completes }) => {
          const pair = createStreamPair();
          const pt = new ZvtPtSession(new ZvtTcpChannel(pair.b));
          pt.on('command', (command, handle) => {
            void (async () => {
              await handle.accept();
              if (command.type !== 'authorisation') {
                await handle.end({ type: 'completion', bmps: [] });
                return;
              }
              const fields = [{ tag: 0x27, format: 'byte' as const, value: resultCode }, ...bmps];
              await handle.send({ type: 'status-information', bmps: fields });
              for (const line of lines) await handle.send(line);
              await handle.end(
                completes
                  ? { type: 'completion', bmps: [] }
                  : { type: 'abort', resultCode, bmps: [] },
              );
            })().catch(() => undefined);
          });
          const reader = await openZvtCardReader({
            channel: new ZvtTcpChannel(pair.a),
            stateFile: path.join(dir, `state-${run++}.json`),
          });
          const events = new ReaderEventLog(reader);
          try {
            await reader.start({
              transaction_id: `tx-hostile-${run}`,
              kind: 'PURCHASE',
              requested_amount: 1000,
              currency: 'EUR',
              pause_on_customer_identified: false,
            });
            const result = await events.waitFor('result', () => true, { timeoutMs: 5000 });
            const parsed = TransactionResult.safeParse({
              v: 1,
              type: 'transaction.result',
              ...result,
            });
            expect(parsed.error?.issues ?? []).toEqual([]);
            if (result.result_code === 'SUCCESS') expect(resultCode).toBe(0);
            expect(events.all('result')).toHaveLength(1);
          } finally {
            await reader.close();
            await pt.close();
            pair.a.destroy();
            pair.b.destroy();
          }
        }),
        { ...PROPERTY, numRuns: 40 },
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
