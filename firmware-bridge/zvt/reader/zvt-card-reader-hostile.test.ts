/**
 * The ZVT driver against a terminal that sends anything the codec can carry: arbitrary
 * 04 0F fields, print lines of any bytes and attribute, any result code, any final
 * message. Whatever it sends, the driver reports one result the agent's schema accepts,
 * with receipts within the spec's limits (property test, fixed seed, few runs: each is a
 * whole payment over an in-memory line).
 *
 * And against a terminal on a real TCP port that accepts a payment and never ends it
 * (testing/hostile-pt.ts): the driver keeps at most its bounds of what the terminal sends,
 * drops the line, and leaves the payment unsettled for recovery to ask about.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { TransactionResult } from '../../serial/messages.js';
import { createStreamPair } from '../../serial/stream-pair.js';
import { ReaderEventLog } from '../../reader/reader-events.js';
import type { PrintLine } from '../message-types.js';
import { ZvtPtSession } from '../pt-session.js';
import type { SerialLinkError } from '../../serial/errors.js';
import type { ZvtError } from '../errors.js';
import type { PtMessage } from '../message-types.js';
import { messageBytes } from '../messages.js';
import { ZvtTcpChannel } from '../tcp-channel.js';
import { bmpList, PROPERTY } from '../testing/arbitraries.js';
import { HostilePt, type Flood } from '../testing/hostile-pt.js';
import { openZvtChannel } from './connect.js';
import { openZvtCardReader, ZvtCardReader, type ZvtReaderOptions } from './zvt-card-reader.js';

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

describe('ZVT driver against a terminal that never ends a payment (TCP)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'zvt-flood-'));
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function payOn(pt: HostilePt, options: Partial<ZvtReaderOptions> = {}) {
    const channel = await openZvtChannel({ tcp: `127.0.0.1:${pt.port}` });
    const warnings: { message: string; context?: Record<string, unknown> }[] = [];
    const reader: ZvtCardReader = await openZvtCardReader({
      channel,
      stateFile: path.join(dir, `state-${Math.random().toString(16).slice(2)}.json`),
      logger: { warn: (message, context) => warnings.push({ message, context }) },
      ...options,
    });
    cleanups.push(() => channel.close());
    // What the session keeps for the outcome: every print line, text block and 04 0F.
    const kept = { messages: 0, bytes: 0 };
    for (const event of ['print-line', 'print-text-block', 'status-information'] as const) {
      reader.session.on(event, (message: PtMessage) => {
        kept.messages++;
        kept.bytes += messageBytes(message).length;
      });
    }
    let seen = 0;
    reader.session.on('intermediate-status', () => seen++);
    const closed = new Promise<SerialLinkError | undefined>((resolve) =>
      reader.once('close', resolve),
    );
    await reader.start({
      transaction_id: 'tx-flood',
      kind: 'PURCHASE',
      requested_amount: 1000,
      currency: 'EUR',
      pause_on_customer_identified: false,
    });
    const error = await closed;
    return { reader, error, warnings, kept, seen: () => seen };
  }

  async function expectOutcomeUnknown(
    reader: ZvtCardReader,
    error: SerialLinkError | undefined,
    warnings: { message: string; context?: Record<string, unknown> }[],
  ) {
    // A dropped line, as a lost one: the agent reconciles on a new line.
    expect(error).toMatchObject({ code: 'PORT_CLOSED', disconnected: true });
    expect(error?.cause).toMatchObject({ code: 'LIMIT_EXCEEDED', outcomeUnknown: true });
    expect(reader.session.current).toBeUndefined();
    // Not settled: only the terminal can say what became of it.
    expect(reader.state.get('tx-flood')).toMatchObject({ phase: 'IN_PROGRESS' });
    const unknown = () =>
      warnings.find((w) => w.message === 'ZVT transaction without a known outcome');
    await expect.poll(unknown).toMatchObject({ context: { transaction_id: 'tx-flood' } });
    expect(String(unknown()?.context?.error)).toMatch(/the line was dropped/);
  }

  it.each<Flood>(['print-lines', 'text-blocks', 'status-informations'])(
    'endless 8,000-character %s: at most 1 MiB kept, the line dropped, the outcome unknown',
    async (flood) => {
      const pt = await HostilePt.listen({ flood });
      cleanups.push(() => pt.close());
      const { reader, error, warnings, kept } = await payOn(pt);
      await expectOutcomeUnknown(reader, error, warnings);
      const { maxBytes, maxMessages } = reader.session.limits;
      expect(kept.messages).toBeLessThanOrEqual(maxMessages);
      expect(kept.bytes).toBeLessThanOrEqual(maxBytes);
      // It was the bound that ended it: the terminal went on past it until the line closed.
      expect(pt.sent.bytes).toBeGreaterThan(maxBytes);
      await expect.poll(() => pt.floodsEndedByRegister).toBe(1);
    },
    30_000,
  );

  it('endless short intermediate statuses: at most the message bound, the line dropped', async () => {
    const pt = await HostilePt.listen({ flood: 'intermediate-statuses', textLength: 8 });
    cleanups.push(() => pt.close());
    const { reader, error, warnings, seen } = await payOn(pt, { limits: { maxMessages: 500 } });
    await expectOutcomeUnknown(reader, error, warnings);
    expect(seen()).toBeLessThanOrEqual(500);
    expect(pt.sent.messages).toBeGreaterThan(500);
  }, 30_000);

  it('intermediate statuses that each restart T4: the command still ends at its ceiling', async () => {
    const pt = await HostilePt.listen({
      flood: 'intermediate-statuses',
      textLength: 8,
      intervalMs: 20,
    });
    cleanups.push(() => pt.close());
    const { reader, error, warnings } = await payOn(pt, {
      t4Ms: 500,
      limits: { maxCommandMs: 1500 },
    });
    await expectOutcomeUnknown(reader, error, warnings);
    expect((error?.cause as ZvtError).message).toMatch(/ran for 1500 ms/);
  }, 30_000);
});

describe('ZVT driver recovering from a terminal that never goes quiet', () => {
  it('asks for a command’s time at most, then drops the line instead of waiting forever', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'zvt-chatter-'));
    const pair = createStreamPair();
    pair.b.resume(); // the register's answers, unread
    // Messages outside any command, one every 100 ms: never the 2 × T3 of quiet recovery waits for.
    const chatter = setInterval(() => pair.b.write(Buffer.from('04FF0117', 'hex')), 100);
    const reader = new ZvtCardReader({
      channel: new ZvtTcpChannel(pair.a),
      stateFile: path.join(dir, 'state.json'),
      t3Ms: 500,
      limits: { maxCommandMs: 1500 },
    });
    try {
      // A payment the driver no longer runs (the agent died): recovery must ask the terminal.
      reader.state.put({
        transaction_id: 'tx-chatter',
        kind: 'PURCHASE',
        amount: 1000,
        currency: 'EUR',
        phase: 'IN_PROGRESS',
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const asked = reader.lastTransaction().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(await asked).toMatchObject({
        code: 'PORT_CLOSED',
        cause: { code: 'LIMIT_EXCEEDED', message: expect.stringMatching(/not quiet/) },
      });
      expect(reader.session.channel.closed).toBe(true);
      expect(reader.state.get('tx-chatter')).toMatchObject({ phase: 'IN_PROGRESS' });
    } finally {
      clearInterval(chatter);
      await reader.close();
      pair.a.destroy();
      pair.b.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 20_000);
});
