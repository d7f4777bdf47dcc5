/**
 * End to end over a pseudo-terminal, every part real: a POS over HTTP, the relay (in
 * process) with its embedded aedes broker on a real port, the agent as its own process
 * (`tps agent --config FILE`), the card reader as its own process (`tps bridge emulate`:
 * the emulated firmware on a pty, whose path the agent opens as `reader.port`, like a USB
 * reader), and an emulated network printer on a real TCP port (`printer.type: tcp`).
 *
 * Each payment is checked against the reader's own record (its memory file): what the
 * POS is told is what the reader did, and the reader ran each transaction once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startEmulatedNetworkPrinter,
  type EmulatedNetworkPrinter,
} from '../firmware-bridge/printer/emulated-network-printer.js';
import { pngToRaster } from '../firmware-bridge/printer/png-raster.js';
import { receiptLike } from '../firmware-bridge/printer/testing/images.js';
import { ptySupport } from '../firmware-bridge/transport/pty.js';
import type { TerminalCreateResponse } from '../protocol/api.js';
import {
  eventually,
  fileText,
  posFor,
  readerLines,
  readerRecord,
  readerRuns,
  registerTerminal,
  runTpsToEnd,
  startAgentProcess,
  startEmulatorProcess,
  writeAgentConfig,
  type TpsChild,
} from './support/e2e-parts.js';
import { startTestRelay, type TestRelay } from './support/relay.js';

const support = await ptySupport();
const HEAD_WIDTH = 384;
const BATTERY = 55;

describe.skipIf(!support.ok)(
  `e2e: POS ⇄ relay ⇄ aedes ⇄ agent process ⇄ pty ⇄ emulated reader process${
    support.ok ? ` (${support.backend})` : `: SKIPPED, no pty here: ${support.reason}`
  }`,
  () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tps-e2e-pty-'));
    const stateFile = path.join(dir, 'reader.jsonl');
    let relay: TestRelay;
    let printer: EmulatedNetworkPrinter;
    let emulator: TpsChild & { devicePath: string };
    let agent: TpsChild;
    let terminal: TerminalCreateResponse;
    let pos: ReturnType<typeof posFor>;
    const context = () =>
      `--- agent output ---\n${agent?.output()}\n--- emulator output ---\n${emulator?.output()}`;

    beforeAll(async () => {
      relay = await startTestRelay();
      printer = await startEmulatedNetworkPrinter({ headWidth: HEAD_WIDTH });
      emulator = await startEmulatorProcess([
        '--state',
        stateFile,
        '--delay-ms',
        '150',
        '--battery',
        String(BATTERY),
      ]);
      terminal = await registerTerminal(relay.baseUrl, relay.account, {
        printer: true,
        battery: true,
      });
      const configFile = writeAgentConfig(dir, terminal, {
        reader: { port: emulator.devicePath },
        printer: { type: 'tcp', host: printer.host, port: printer.port, head_width: HEAD_WIDTH },
      });
      agent = startAgentProcess(configFile);
      pos = posFor(() => relay.baseUrl, terminal);
      // The agent is up, the reader answered it, and its status reached the relay.
      await eventually(
        () => pos('/terminal/status', {}),
        (r) => r.body?.status?.connected === true && r.body.status.battery_percentage === BATTERY,
        { ms: 20_000, what: 'the terminal connected with its battery reading', context },
      );
    }, 40_000);

    afterAll(async () => {
      await agent?.stop();
      await emulator?.stop();
      await printer?.close();
      await relay?.close();
      rmSync(dir, { recursive: true, force: true });
      if (relay?.dataDir) rmSync(relay.dataDir, { recursive: true, force: true });
    });

    /** Purchase or refund until its result: the create repeated while it is PROCESSING. */
    async function create(operation: string, body: Record<string, unknown>) {
      return eventually(
        () => pos(operation, { currency: 'EUR', wait_seconds: 5, ...body }),
        (r) => r.status !== 200 || r.body.transaction.state !== 'PROCESSING',
        { ms: 20_000, what: `${operation} ${String(body.external_id)} to finish`, context },
      );
    }

    /** What the POS got for a finished payment equals the reader's record, run once. */
    function expectReaderAgrees(transaction: Record<string, unknown>) {
      const id = transaction.id as string;
      const record = readerRecord(stateFile, id);
      expect(record, `reader memory:\n${fileText(stateFile)}`).toMatchObject({
        phase: 'COMPLETED',
        result_code: transaction.result_code,
      });
      expect(transaction.reference).toBe(record?.details?.reference);
      expect(transaction.total_amount).toBe(record?.details?.total_amount);
      expect(readerRuns(stateFile, id)).toHaveLength(1);
      return record!;
    }

    it('shows the terminal connected, with the battery the reader reports', async () => {
      const status = await pos('/terminal/status', {});
      expect(status.status).toBe(200);
      expect(status.body.status).toMatchObject({
        terminal_id: terminal.terminal_id,
        connected: true,
        battery_percentage: BATTERY,
        battery_charging: false,
        plugged_in: false,
        transaction_state: 'READY',
      });
    });

    it('purchase: the reader’s result reaches the POS, then the confirm', async () => {
      const created = await create('/transaction/purchase', {
        external_id: 'pty-purchase-1',
        requested_amount: 2500,
      });
      expect(created.body.transaction).toMatchObject({
        state: 'AWAITING_CONFIRM',
        type: 'PURCHASE',
        result_code: 'SUCCESS',
        total_amount: 2500,
      });
      const record = expectReaderAgrees(created.body.transaction);
      expect(record.start).toMatchObject({ kind: 'PURCHASE', requested_amount: 2500 });
      const confirmed = await pos('/transaction/confirm', {
        external_id: 'pty-purchase-1',
        result_code: 'SUCCESS',
      });
      expect(confirmed.body.transaction.state).toBe('CONFIRMED');
    });

    it('refund of that purchase, after its confirm: the reader runs a REFUND', async () => {
      const purchase = await pos('/transaction/get', { external_id: 'pty-purchase-1' });
      expect(purchase.body.transaction.state).toBe('CONFIRMED');
      const refunded = await create('/transaction/refund', {
        external_id: 'pty-refund-1',
        requested_amount: 2500,
        original_purchase_external_id: 'pty-purchase-1',
      });
      expect(refunded.body.transaction).toMatchObject({
        state: 'AWAITING_CONFIRM',
        type: 'REFUND',
        result_code: 'SUCCESS',
        total_amount: 2500,
        original_purchase_id: purchase.body.transaction.id,
      });
      const record = expectReaderAgrees(refunded.body.transaction);
      expect(record.start).toMatchObject({ kind: 'REFUND', requested_amount: 2500 });
      const confirmed = await pos('/transaction/confirm', {
        external_id: 'pty-refund-1',
        result_code: 'SUCCESS',
      });
      expect(confirmed.body.transaction.state).toBe('CONFIRMED');
    });

    it('pause at customer identification, continue with a new amount', async () => {
      const paused = await create('/transaction/purchase', {
        external_id: 'pty-pause-1',
        requested_amount: 1000,
        options: { on_customer_identified: { pause: true } },
      });
      expect(paused.body.transaction.state).toBe('AWAITING_CONTINUE');
      const id = paused.body.transaction.id as string;
      expect(readerRecord(stateFile, id)?.phase).toBe('CUSTOMER_IDENTIFIED');
      const continued = await pos('/transaction/continue', {
        external_id: 'pty-pause-1',
        requested_amount: 1300,
        wait_seconds: 10,
      });
      expect(continued.body.transaction).toMatchObject({
        state: 'AWAITING_CONFIRM',
        result_code: 'SUCCESS',
        total_amount: 1300,
      });
      const record = expectReaderAgrees(continued.body.transaction);
      expect(record.continued_amount).toBe(1300);
      await pos('/transaction/confirm', { external_id: 'pty-pause-1', result_code: 'SUCCESS' });
    });

    it('confirm as failed after a confirmed success: the reader reverses it', async () => {
      const created = await create('/transaction/purchase', {
        external_id: 'pty-reverse-1',
        requested_amount: 700,
      });
      expect(created.body.transaction.result_code).toBe('SUCCESS');
      const id = created.body.transaction.id as string;
      expectReaderAgrees(created.body.transaction);
      const confirmed = await pos('/transaction/confirm', {
        external_id: 'pty-reverse-1',
        result_code: 'SUCCESS',
      });
      expect(confirmed.body.transaction.state).toBe('CONFIRMED');
      const failed = await pos('/transaction/confirm', {
        external_id: 'pty-reverse-1',
        result_code: 'ABORTED',
      });
      expect(failed.body.transaction).toMatchObject({ state: 'COMMITTED', result_code: 'ABORTED' });
      const reversed = await eventually(
        () => readerRecord(stateFile, id),
        (r) => r?.phase === 'CANCELLED',
        { what: 'the reader to reverse the payment', context },
      );
      expect(reversed).toMatchObject({ phase: 'CANCELLED', result_code: 'REVERSED' });
      // Reversed, not run again.
      expect(readerRuns(stateFile, id)).toHaveLength(1);
      const after = await pos('/transaction/get', { external_id: 'pty-reverse-1' });
      expect(after.body.transaction).toMatchObject({ state: 'COMMITTED', result_code: 'ABORTED' });
    });

    it('print: the PNG reaches the network printer as the raster of that image', async () => {
      const png = receiptLike(HEAD_WIDTH, 48);
      const job = printer.printer.nextJob();
      const res = await pos('/terminal/print', {
        contents: png.toString('base64'),
        format: 'PNG',
      });
      expect(res.status).toBe(200);
      const printed = await Promise.race([
        job,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`nothing printed\n${context()}`)), 10_000),
        ),
      ]);
      const expected = pngToRaster(png, { headWidth: HEAD_WIDTH });
      expect(printed.cut).toBeDefined();
      expect(printed.raster.width).toBe(HEAD_WIDTH);
      expect(printed.raster.height).toBe(expected.height);
      expect(Buffer.from(printed.raster.data).equals(Buffer.from(expected.data))).toBe(true);
    });

    it('status changes during a payment reach /terminal/status, and settle back', async () => {
      // 100001: the reader takes 2 s, long enough to see it busy.
      const started = await pos('/transaction/purchase', {
        external_id: 'pty-status-1',
        requested_amount: 100001,
        currency: 'EUR',
        wait_seconds: 0,
      });
      expect(started.body.transaction.state).toBe('PROCESSING');
      const busy = await eventually(
        () => pos('/terminal/status', {}),
        (r) =>
          r.body.status.transaction_state !== 'READY' &&
          /present card|Processing/.test(r.body.status.screen_message ?? ''),
        { what: 'a busy status with the reader’s screen', context },
      );
      expect(busy.body.status).toMatchObject({ connected: true, battery_percentage: BATTERY });
      const done = await create('/transaction/purchase', {
        external_id: 'pty-status-1',
        requested_amount: 100001,
      });
      expect(done.body.transaction.result_code).toBe('SUCCESS');
      const ready = await eventually(
        () => pos('/terminal/status', {}),
        (r) =>
          r.body.status.transaction_state === 'READY' &&
          r.body.status.screen_message === 'Approved',
        { what: 'the status back to READY with the result screen', context },
      );
      expect(ready.body.status).toMatchObject({
        connected: true,
        battery_percentage: BATTERY,
        plugged_in: false,
      });
      await pos('/transaction/confirm', { external_id: 'pty-status-1', result_code: 'SUCCESS' });
      // The changes were also published as terminal-status events.
      const events = await pos('/event/list', {
        filter: {
          subject: { eq: terminal.terminal_id },
          type: { eq: 'eu.vendor.api.pos.v0.TerminalStatus' },
        },
        limit: 1000,
      });
      const screens = (events.body.events as Array<{ data: { screen_message?: string } }>).map(
        (e) => e.data.screen_message,
      );
      expect(screens).toContain('Approved');
    });

    it('the agent stopped: the terminal shows disconnected, and the bench probe reads the reader’s last record', async () => {
      await agent.stop('SIGTERM');
      await eventually(
        () => pos('/terminal/status', {}),
        (r) => r.body.status.connected === false,
        { what: 'connected false after the agent stopped', context },
      );
      const probe = await runTpsToEnd(['bridge', 'probe', emulator.devicePath, '--json']);
      expect(probe.code, probe.stderr).toBe(0);
      const report = JSON.parse(probe.stdout) as {
        ok: boolean;
        status: Record<string, unknown>;
        lastTransaction: { transaction_id: string; phase: string; result_code?: string };
      };
      const lastStarted = readerLines(stateFile)
        .filter((r) => r.sequence > 0)
        .sort((a, b) => a.sequence - b.sequence)
        .at(-1)!;
      expect(report.ok).toBe(true);
      expect(report.status).toMatchObject({ battery_percentage: BATTERY, plugged_in: false });
      expect(report.lastTransaction).toMatchObject({
        transaction_id: lastStarted.transaction_id,
        phase: 'COMPLETED',
        result_code: 'SUCCESS',
      });
      // Five payments, five runs of the reader: nothing ran twice.
      const started = new Set(
        readerLines(stateFile)
          .filter((r) => r.sequence > 0)
          .map((r) => `${r.transaction_id}#${r.sequence}`),
      );
      expect(started.size).toBe(5);
    });
  },
);
