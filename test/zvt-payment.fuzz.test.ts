/**
 * A payment on the ZVT driver while a hostile terminal sends sequences of APDUs: bursts of
 * valid PT messages of any content (04 FF, 04 0F, 06 D1 up to 8,000 characters, 06 D3, 06 0F,
 * 06 1E, acknowledgements) and of arbitrary APDUs, in any order, before and after the end of
 * the payment. Whatever comes: nothing throws or rejects unhandled, the payment has ended
 * once the command's total time has passed (a result, or given up with the outcome unknown),
 * at most one result is reported and the agent's schema accepts it, and the session kept
 * no more than its bounds of what the terminal sent. Time is manual: the bound is checked,
 * not waited for. `npm run fuzz` runs it with many more runs.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ManualTimers } from '../common/testing/manual-timers.js';
import type { ReaderResult } from '../firmware-bridge/reader/card-reader.js';
import { TransactionResult } from '../firmware-bridge/serial/messages.js';
import { createStreamPair } from '../firmware-bridge/serial/stream-pair.js';
import { encodeApdu } from '../firmware-bridge/zvt/apdu.js';
import type { PtMessage } from '../firmware-bridge/zvt/message-types.js';
import { messageBytes, negativeAck, positiveAck } from '../firmware-bridge/zvt/messages.js';
import { ZvtCardReader } from '../firmware-bridge/zvt/reader/zvt-card-reader.js';
import { ZvtTcpChannel } from '../firmware-bridge/zvt/tcp-channel.js';
import { bmpList, bytes, container } from '../firmware-bridge/zvt/testing/arbitraries.js';
import { fuzzParameters } from './support/fuzz.js';

const LIMITS = { maxMessages: 100, maxBytes: 64 * 1024, maxCommandMs: 60_000 };
const T4_MS = 30_000;

const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 60 }).map((s) => s.replace(/[^\x20-\x7e]/g, '?')),
  fc.integer({ min: 0, max: 8000 }).map((n) => 'X'.repeat(n)),
);

const ptMessage: fc.Arbitrary<PtMessage> = fc.oneof(
  fc
    .integer({ min: 0, max: 255 })
    .map((status): PtMessage => ({ type: 'intermediate-status', status, bmps: [] })),
  bmpList(6).map((bmps): PtMessage => ({ type: 'status-information', bmps })),
  fc.record({
    type: fc.constant('print-line' as const),
    attribute: fc.integer({ min: 0, max: 255 }),
    text,
  }),
  container.map((value): PtMessage => ({
    type: 'print-text-block',
    bmps: [{ tag: 0x06, format: 'tlv', value }],
  })),
  fc.constant<PtMessage>({ type: 'completion', bmps: [] }),
  fc
    .integer({ min: 0, max: 255 })
    .map((resultCode): PtMessage => ({ type: 'abort', resultCode, bmps: [] })),
);

/** One APDU as the terminal writes it. */
const apdu: fc.Arbitrary<Buffer> = fc.oneof(
  { weight: 4, arbitrary: ptMessage.map((message) => messageBytes(message)) },
  fc.constant(messageBytes(positiveAck())),
  fc.integer({ min: 0, max: 255 }).map((code) => messageBytes(negativeAck(code))),
  fc
    .record({ cls: fc.integer({ min: 0, max: 255 }), ins: fc.integer({ min: 0, max: 255 }) })
    .chain(({ cls, ins }) => bytes(0, 300).map((data) => encodeApdu({ cls, ins, data }))),
);

/** The same APDU several times in a row (a terminal that repeats itself). */
const sequence = fc.array(
  fc.record({ apdu, times: fc.integer({ min: 1, max: 60 }), pause: fc.boolean() }),
  { minLength: 1, maxLength: 12 },
);

describe('a ZVT payment, fed sequences of APDUs by a hostile terminal', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'zvt-fuzz-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('ends within its bounds, keeps no more than them, never throws', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(sequence, async (bursts) => {
          const timers = new ManualTimers();
          const pair = createStreamPair();
          const reader = new ZvtCardReader({
            channel: new ZvtTcpChannel(pair.a),
            stateFile: path.join(dir, `state-${run++}.json`),
            timers,
            clock: timers.clock,
            t4Ms: T4_MS,
            limits: LIMITS,
          });
          const kept = { messages: 0, bytes: 0 };
          for (const event of ['print-line', 'print-text-block', 'status-information'] as const) {
            reader.session.on(event, (message: PtMessage) => {
              kept.messages++;
              kept.bytes += messageBytes(message).length;
            });
          }
          const results: ReaderResult[] = [];
          reader.on('result', (result) => results.push(result));
          // The terminal: registers, then answers the payment with the sequence.
          const pt = new ZvtTcpChannel(pair.b);
          pt.on('apdu', (received) => {
            const command = received.subarray(0, 2).toString('hex');
            if (command === '0600') pair.b.write(Buffer.from('800000060f00', 'hex'));
            if (command !== '0601') return;
            pair.b.write(messageBytes(positiveAck()));
            void (async () => {
              for (const { apdu: bytesOut, times, pause } of bursts) {
                for (let i = 0; i < times; i++) pair.b.write(bytesOut);
                if (pause) {
                  await pair.idle();
                  timers.advance(T4_MS / 2);
                }
              }
            })();
          });
          try {
            const started = reader
              .start({
                transaction_id: 'tx-fuzz',
                kind: 'PURCHASE',
                requested_amount: 1000,
                currency: 'EUR',
                pause_on_customer_identified: false,
              })
              .catch((error: unknown) => error);
            // Past the command's whole time, however the terminal kept it busy.
            for (let step = 0; step < 8; step++) {
              await pair.idle();
              timers.advance(LIMITS.maxCommandMs / 4);
            }
            await pair.idle();
            await started;
            expect(reader.session.current).toBeUndefined();
            expect(results.length).toBeLessThanOrEqual(1);
            for (const result of results) {
              const parsed = TransactionResult.safeParse({
                v: 1,
                type: 'transaction.result',
                ...result,
              });
              expect(parsed.error?.issues ?? []).toEqual([]);
            }
            // A payment without a result is recorded as unsettled: recovery asks the terminal.
            if (results.length === 0) {
              expect(reader.state.get('tx-fuzz')).toMatchObject({ phase: 'IN_PROGRESS' });
            }
            expect(kept.messages).toBeLessThanOrEqual(LIMITS.maxMessages);
            expect(kept.bytes).toBeLessThanOrEqual(LIMITS.maxBytes);
          } finally {
            await reader.close();
            pair.a.destroy();
            pair.b.destroy();
          }
        }),
        fuzzParameters(40),
      );
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
  }, 120_000);
});
