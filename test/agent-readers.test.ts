/**
 * One end-to-end suite, run for each card reader the agent drives: a POS over HTTP, the
 * relay with its embedded broker, the agent (in process) with the reader its config names
 * (test/support/readers-under-test.ts: the native emulated reader; the emulated ZVT terminal
 * over a stream pair, a pty and TCP), and a receipt printer on an in-memory line. Each
 * answer is checked against what the reader itself recorded: what the POS is told is what
 * the reader did, and nothing ran twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { parseAgentConfig } from '../agent/config.js';
import { DriverPrinter } from '../agent/printer-adapter.js';
import { EmulatedPrinter } from '../firmware-bridge/printer/emulated-printer.js';
import { receiptLike } from '../firmware-bridge/printer/testing/images.js';
import { createStreamPair } from '../firmware-bridge/serial/stream-pair.js';
import { ptySupport } from '../firmware-bridge/transport/pty.js';
import type { TerminalCreateResponse } from '../protocol/api.js';
import { eventually, posFor, registerTerminal } from './support/e2e-parts.js';
import { READER_VARIANTS, type ReaderUnderTest } from './support/readers-under-test.js';
import { startTestRelay, type TestRelay } from './support/relay.js';

const pty = await ptySupport();
const DELAY_MS = 100;
const HEAD_WIDTH = 384;

const variants = READER_VARIANTS.filter((v) => pty.ok || !v.name.includes('pty'));

describe.each(variants)('agent end to end: $name', ({ protocol, open }) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tps-readers-'));
  const logger = pino({ level: process.env.TEST_LOG ? 'debug' : 'silent' });
  let relay: TestRelay;
  let reader: ReaderUnderTest;
  let agent: RunningAgent;
  let printer: EmulatedPrinter;
  let driverPrinter: DriverPrinter;
  let terminal: TerminalCreateResponse;
  let pos: ReturnType<typeof posFor>;

  beforeAll(async () => {
    relay = await startTestRelay();
    terminal = await registerTerminal(relay.baseUrl, relay.account, { printer: true });
    reader = await open(dir, DELAY_MS, logger);
    printer = new EmulatedPrinter();
    driverPrinter = new DriverPrinter(
      async () => {
        const line = createStreamPair();
        printer.attach(line.b);
        return { stream: line.a, close: async () => void line.a.destroy() };
      },
      { headWidth: HEAD_WIDTH, keepOpen: true },
    );
    const parsed = parseAgentConfig(
      {
        terminal_id: terminal.terminal_id,
        broker: {
          url: terminal.agent.broker_url,
          username: terminal.agent.username,
          password: terminal.agent.password,
        },
        reader: { port: '/dev/unused' },
        data_dir: path.join(dir, 'agent-data'),
        heartbeat_s: 300,
      },
      dir,
    );
    if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
    agent = await startAgent(parsed.config, {
      reader: reader.hardware.reader,
      readerCapabilities: reader.hardware.capabilities,
      printer: driverPrinter,
      logger,
    });
    pos = posFor(() => relay.baseUrl, terminal);
    await eventually(
      () => pos('/terminal/status', {}),
      (r) => r.body?.status?.connected === true && r.body.status.transaction_state === 'READY',
      { ms: 20_000, what: 'the terminal connected and ready' },
    );
  }, 30_000);

  afterAll(async () => {
    await agent?.stop();
    await driverPrinter?.close();
    await reader?.close();
    await relay?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Purchase or refund until its result: the create repeated while it is PROCESSING. */
  async function create(operation: string, body: Record<string, unknown>) {
    const res = await eventually(
      () => pos(operation, { currency: 'EUR', wait_seconds: 5, ...body }),
      (r) => r.status !== 200 || r.body.transaction.state !== 'PROCESSING',
      { ms: 20_000, what: `${operation} ${String(body.external_id)} to finish` },
    );
    expect(res.status).toBe(200);
    return res.body.transaction as Record<string, unknown> & { id: string; reference?: string };
  }

  async function confirm(externalId: string, resultCode: string) {
    const res = await pos('/transaction/confirm', {
      external_id: externalId,
      result_code: resultCode,
    });
    expect(res.status).toBe(200);
    return res.body.transaction as Record<string, unknown>;
  }

  it('purchase: the reader’s result reaches the POS, then the confirm', async () => {
    const txn = await create('/transaction/purchase', {
      external_id: 'buy-1',
      requested_amount: 2501,
    });
    expect(txn).toMatchObject({ state: 'AWAITING_CONFIRM', result_code: 'SUCCESS' });
    expect(txn.total_amount).toBe(2501);
    expect(txn.reference).toEqual(expect.any(String));
    expect(reader.truth({ ...txn, requested_amount: 2501 })).toBe('CHARGED');
    expect(reader.runs(txn)).toBe(1);
    expect((await confirm('buy-1', 'SUCCESS')).state).toBe('CONFIRMED');
  });

  it('refund of that purchase: the reader runs a refund', async () => {
    const txn = await create('/transaction/refund', {
      external_id: 'refund-1',
      requested_amount: 2501,
      original_purchase_external_id: 'buy-1',
    });
    expect(txn).toMatchObject({ type: 'REFUND', result_code: 'SUCCESS', total_amount: 2501 });
    expect(reader.truth(txn)).toBe('CHARGED');
    expect((await confirm('refund-1', 'SUCCESS')).state).toBe('CONFIRMED');
  });

  it('decline: the issuer’s refusal reaches the POS, nothing charged', async () => {
    const txn = await create('/transaction/purchase', {
      external_id: 'decline-1',
      requested_amount: 100006,
    });
    expect(txn).toMatchObject({ state: 'AWAITING_CONFIRM', result_code: 'DECLINED_BY_ISSUER' });
    expect(reader.truth({ ...txn, requested_amount: 100006 })).toBe('NOT_CHARGED');
    await confirm('decline-1', 'DECLINED_BY_ISSUER');
  });

  it('customer abort at the terminal: ABORTED, nothing charged', async () => {
    const txn = await create('/transaction/purchase', {
      external_id: 'abort-1',
      requested_amount: 100004,
    });
    expect(txn).toMatchObject({ state: 'AWAITING_CONFIRM', result_code: 'ABORTED' });
    expect(reader.truth({ ...txn, requested_amount: 100004 })).toBe('NOT_CHARGED');
    await confirm('abort-1', 'ABORTED');
  });

  it('confirm as failed after a confirmed success: the terminal reverses the payment', async () => {
    const txn = await create('/transaction/purchase', {
      external_id: 'reverse-1',
      requested_amount: 702,
    });
    expect(txn.result_code).toBe('SUCCESS');
    await confirm('reverse-1', 'SUCCESS');
    expect(await confirm('reverse-1', 'ABORTED')).toMatchObject({
      state: 'COMMITTED',
      result_code: 'ABORTED',
    });
    await eventually(
      () => reader.truth({ ...txn, requested_amount: 702 }),
      (truth) => truth === 'REVERSED',
      { what: 'the terminal to reverse the payment' },
    );
    expect(reader.runs(txn)).toBe(1);
  });

  it('cancel while processing: the POS confirms it failed, the terminal stops, nothing charged', async () => {
    // 100020: a payment that takes 30 s, stopped long before.
    const started = await pos('/transaction/purchase', {
      external_id: 'cancel-1',
      requested_amount: 100020,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(started.body.transaction.state).toBe('PROCESSING');
    await eventually(
      () => pos('/terminal/status', {}),
      (r) => r.body.status.transaction_state !== 'READY',
      { what: 'the terminal busy with the payment' },
    );
    expect(await confirm('cancel-1', 'ABORTED')).toMatchObject({ result_code: 'ABORTED' });
    await eventually(
      () => pos('/terminal/status', {}),
      (r) => r.body.status.transaction_state === 'READY',
      { what: 'the terminal ready again', ms: 15_000 },
    );
    const after = await pos('/transaction/get', { external_id: 'cancel-1' });
    expect(reader.truth({ ...after.body.transaction, requested_amount: 100020 })).toBe(
      'NOT_CHARGED',
    );
  });

  it('status and screen messages: busy with the terminal’s screen during a payment, then ready', async () => {
    // 100001: 2 s, long enough to see the terminal busy.
    const started = await pos('/transaction/purchase', {
      external_id: 'status-1',
      requested_amount: 100001,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(started.body.transaction.state).toBe('PROCESSING');
    const busy = await eventually(
      () => pos('/terminal/status', {}),
      (r) =>
        r.body.status.transaction_state !== 'READY' &&
        typeof r.body.status.screen_message === 'string' &&
        r.body.status.screen_message !== 'Ready',
      { what: 'a busy status with the terminal’s screen' },
    );
    expect(busy.body.status.connected).toBe(true);
    const done = await create('/transaction/purchase', {
      external_id: 'status-1',
      requested_amount: 100001,
    });
    expect(done.result_code).toBe('SUCCESS');
    await eventually(
      () => pos('/terminal/status', {}),
      (r) => r.body.status.transaction_state === 'READY',
      { what: 'the status back to READY' },
    );
    await confirm('status-1', 'SUCCESS');
  });

  it('print: the PNG reaches the receipt printer', async () => {
    const job = printer.nextJob();
    const res = await pos('/terminal/print', {
      contents: receiptLike(HEAD_WIDTH, 48).toString('base64'),
      format: 'PNG',
    });
    expect(res.status).toBe(200);
    const printed = await job;
    expect(printed.raster.width).toBe(HEAD_WIDTH);
  });

  it('pause at customer identification: where the reader has it, else refused up front', async () => {
    const res = await pos('/transaction/purchase', {
      external_id: 'pause-1',
      requested_amount: 1000,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
      wait_seconds: 5,
    });
    if (protocol === 'native') {
      expect(res.body.transaction.state).toBe('AWAITING_CONTINUE');
      await confirm('pause-1', 'ABORTED');
    } else {
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('UNSUPPORTED_BY_TERMINAL');
    }
  });
});
