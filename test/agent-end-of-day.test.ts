/**
 * End-of-day of a ZVT terminal, end to end: a relay in process (real HTTP, its embedded
 * broker, SQLite), an agent in process driving the emulated ZVT terminal over a pty
 * (serial framing) and over TCP, as `tps agent` opens it. The day's end comes on the fleet
 * configuration's schedule (the end-of-day's clock moved by hand, no real waiting), on
 * demand through the API and through `tps fleet end-of-day`, and when the terminal says it
 * needs one (F0); never during a payment. Its totals reach `/event/list` and a webhook; a
 * failed one is reported with the terminal's reason and tried again after its back-off.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { parseAgentConfig } from '../agent/config.js';
import { openHardware, type Hardware } from '../agent/hardware.js';
import { ManualTimers } from '../common/testing/manual-timers.js';
import {
  FileTerminalMemory,
  parseTerminalMemory,
  type JournalEntry,
} from '../firmware-bridge/emulator/zvt/terminal-memory.js';
import { listenTcp, serveSerial } from '../firmware-bridge/emulator/zvt/terminal-server.js';
import { ZvtTerminalEmulator } from '../firmware-bridge/emulator/zvt/zvt-terminal.js';
import { openPty } from '../firmware-bridge/transport/pty.js';
import type { TerminalSettlement } from '../protocol/settlement.js';
import { tempDir } from './agent-harness.js';
import { runTpsToEnd } from './support/e2e-parts.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

const silent = pino({ level: process.env.TEST_LOG ? 'debug' : 'silent' });
/** 20:00 UTC: 21:00 in Berlin, the evening before the 03:00 end-of-day. */
const EVENING = Date.parse('2026-11-27T20:00:00.000Z');

interface Line {
  /** `reader` settings of the agent's config that reach the emulated terminal. */
  reader: Record<string, unknown>;
  close(): Promise<void>;
}

const LINES: Array<{
  name: string;
  open(terminal: ZvtTerminalEmulator): Promise<Line>;
}> = [
  {
    name: 'serial (pty)',
    open: async (terminal) => {
      const pty = await openPty();
      serveSerial(terminal, pty.stream);
      return { reader: { port: pty.path, baud_rate: 115_200 }, close: () => pty.close() };
    },
  },
  {
    name: 'TCP',
    open: async (terminal) => {
      const listener = await listenTcp(terminal, { port: 0 });
      return { reader: { tcp: `127.0.0.1:${listener.port}` }, close: () => listener.close() };
    },
  },
];

interface Receiver {
  url: string;
  bodies: string[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function until<T>(read: () => Promise<T> | T, ok: (value: T) => boolean, what: string) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe.each(LINES)('end-of-day of a ZVT terminal over $name', ({ open }) => {
  let relay: TestRelay;
  let receiver: Receiver;
  let terminal: ZvtTerminalEmulator;
  let line: Line;
  let hardware: Hardware;
  let agent: RunningAgent;
  let memoryFile: string;
  let terminalId: string;
  let terminalCredential: { username: string; password: string };
  const day = new ManualTimers(EVENING);
  const settlementsSeen = new Set<string>();

  const api = (operation: string, body: object, credential = relay.account) =>
    post(relay.baseUrl, 'v1', operation, body, credential);
  const entries = (): JournalEntry[] => [
    ...new Map(parseTerminalMemory(memoryFile).map((e) => [e.seq, e])).values(),
  ];
  /** The next settlement event of the terminal not seen before, from /event/list. */
  const nextSettlement = () =>
    until(
      async () => {
        const listed = await api('/event/list', {
          filter: { subject: { eq: terminalId } },
          limit: 1000,
        });
        const events = (listed.body.events as Array<{ id: string; type: string; data: unknown }>)
          .filter((e) => e.type.endsWith('.TerminalSettlement'))
          .filter((e) => !settlementsSeen.has(e.id));
        return events[0];
      },
      (event) => event !== undefined,
      'a settlement event',
    ).then((event) => {
      settlementsSeen.add(event!.id);
      return event!.data as TerminalSettlement;
    });
  const pay = async (externalId: string, amount: number) => {
    const answer = await api(
      '/transaction/purchase',
      {
        terminal_id: terminalId,
        external_id: externalId,
        requested_amount: amount,
        currency: 'EUR',
        wait_seconds: 20,
      },
      terminalCredential,
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    await api(
      '/transaction/confirm',
      { terminal_id: terminalId, external_id: externalId, result_code: 'SUCCESS' },
      terminalCredential,
    );
    return answer.body.transaction as { result_code?: string; state: string };
  };

  beforeAll(async () => {
    relay = await startTestRelay({
      webhookAllowHttp: true,
      webhookAllowNetworks: '127.0.0.1/32',
      webhookRetryBaseMs: 20,
      webhookRetryCapMs: 100,
    });
    receiver = await startReceiver();
    const created = await api('/terminal/create', {});
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    terminalId = created.body.terminal_id;
    terminalCredential = { username: created.body.username, password: created.body.password };
    const hook = await api('/webhook/create', {
      url: receiver.url,
      filter: { subject: { eq: terminalId } },
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);

    const dir = tempDir('end-of-day');
    memoryFile = path.join(dir, 'zvt-terminal.jsonl');
    terminal = new ZvtTerminalEmulator({
      memory: new FileTerminalMemory(memoryFile),
      delayMs: 300,
      endOfDayAfterPayments: 2,
    });
    line = await open(terminal);
    const parsed = parseAgentConfig(
      {
        terminal_id: terminalId,
        broker: {
          url: created.body.agent.broker_url,
          username: created.body.agent.username,
          password: created.body.agent.password,
        },
        reader: { protocol: 'zvt', ...line.reader },
        printer: { type: 'none' },
        data_dir: path.join(dir, 'agent'),
        heartbeat_s: 3600,
        log_level: 'silent',
      },
      dir,
    );
    if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
    hardware = openHardware(parsed.config, silent);
    agent = await startAgent(parsed.config, {
      reader: hardware.reader,
      readerCapabilities: hardware.capabilities,
      logger: silent,
      endOfDay: {
        ...(hardware.endOfDay ? { run: hardware.endOfDay } : {}),
        onRequired: (listener) => hardware.onEndOfDayRequired(listener),
        clock: day.clock,
        timers: day,
        retry: { initialMs: 60_000, maxMs: 60_000, random: () => 1 },
      },
    });
    await until(() => agent.link.connected, Boolean, 'the agent to connect');
  }, 30_000);

  afterAll(async () => {
    await agent?.stop();
    await hardware?.close();
    await line?.close();
    await terminal?.close();
    await receiver?.close();
    await relay?.close();
  });

  it('runs at the daily time of the fleet configuration, in its time zone, with the day’s totals', async () => {
    const set = await api('/fleet/config/set', {
      scope: { terminal_id: terminalId },
      config: { end_of_day: { at: '03:00', time_zone: 'Europe/Berlin' } },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    await until(
      () => agent.endOfDay.nextRun?.toISOString(),
      (next) => next === '2026-11-28T02:00:00.000Z',
      'the schedule to apply',
    );
    expect((await pay('eod-schedule-1', 1250)).result_code).toBe('SUCCESS');

    day.advance(5 * 3_600_000); // 01:00 UTC: 02:00 in Berlin, an hour early
    expect(entries().some((e) => e.kind === 'END_OF_DAY')).toBe(false);
    day.advance(2 * 3_600_000); // 03:00 UTC: past 03:00 in Berlin
    const settlement = await nextSettlement();
    expect(settlement).toMatchObject({
      terminal_id: terminalId,
      status: 'SUCCESS',
      trigger: 'SCHEDULE',
      attempt: 1,
      total_amount: 1250,
      currency: 'EUR',
      started_at: '2026-11-28T02:00:00.000Z',
    });
    expect(settlement.totals).toHaveLength(1);
    expect(settlement.totals?.[0]).toMatchObject({ count: 1, amount: 1250 });
    expect(settlement.first_receipt_number).toBe(settlement.last_receipt_number);
    expect(settlement.receipt_text).toMatch(/END OF DAY/);
    expect(settlement.receipt_text).toMatch(/BATCH CLOSED/);
    expect(entries().filter((e) => e.kind === 'END_OF_DAY')).toHaveLength(1);

    // The webhook gets the same event.
    await until(
      () => receiver.bodies.filter((b) => b.includes('TerminalSettlement')),
      (found) => found.length >= 1,
      'the settlement webhook',
    );
    const delivered = JSON.parse(
      receiver.bodies.find((b) => b.includes('TerminalSettlement'))!,
    ) as { data: TerminalSettlement };
    expect(delivered.data).toMatchObject({ trigger: 'SCHEDULE', total_amount: 1250 });
  }, 40_000);

  it('runs when the terminal reports F0 (end-of-day required), before the next payment', async () => {
    expect((await pay('eod-f0-1', 100)).result_code).toBe('SUCCESS');
    expect((await pay('eod-f0-2', 200)).result_code).toBe('SUCCESS');
    expect(terminal.endOfDayDue()).toBe(true);
    // The heartbeat's status enquiry hears F0; the next payment waits for the end-of-day.
    await hardware.reader.status();
    expect((await pay('eod-f0-3', 300)).result_code).toBe('SUCCESS');
    const settlement = await nextSettlement();
    expect(settlement).toMatchObject({
      status: 'SUCCESS',
      trigger: 'TERMINAL_REQUIRED',
      total_amount: 300,
    });
    const all = entries();
    const closed = all.findLast((e) => e.kind === 'END_OF_DAY')!;
    const third = all.findLast((e) => e.kind === 'PAYMENT' && e.amount === 300)!;
    expect(closed.seq).toBeLessThan(third.seq);
  }, 40_000);

  it('runs when the terminal refuses a payment with F0, and the next payment goes through', async () => {
    // The batch holds 300 from before; with this one it holds the 2 the terminal allows.
    expect((await pay('eod-refused-1', 110)).result_code).toBe('SUCCESS');
    // Nothing asked the terminal's status: the next payment itself ends with 06 1E F0.
    const refused = await pay('eod-refused-2', 120);
    expect(refused.result_code, JSON.stringify(refused)).toBe('END_OF_DAY_REQUIRED');
    const settlement = await nextSettlement();
    expect(settlement).toMatchObject({
      status: 'SUCCESS',
      trigger: 'TERMINAL_REQUIRED',
      total_amount: 300 + 110,
    });
    expect((await pay('eod-refused-3', 130)).result_code).toBe('SUCCESS');
  }, 40_000);

  it('runs on demand through the API, and waits for the payment under way', async () => {
    const paying = pay('eod-demand-1', 4200);
    await until(
      () => entries().some((e) => e.kind === 'PAYMENT' && e.amount === 4200),
      Boolean,
      'the payment to start',
    );
    const asked = await api('/fleet/end-of-day', { terminal_id: terminalId });
    expect(asked.status, JSON.stringify(asked.body)).toBe(200);
    expect(asked.body).toEqual({ terminal_ids: [terminalId] });
    expect((await paying).result_code).toBe('SUCCESS');
    const settlement = await nextSettlement();
    expect(settlement).toMatchObject({ status: 'SUCCESS', trigger: 'ON_DEMAND' });
    // The payment under way was finished first and is in the batch it closed.
    const all = entries();
    const payment = all.findLast((e) => e.kind === 'PAYMENT' && e.amount === 4200)!;
    const closed = all.findLast((e) => e.kind === 'END_OF_DAY')!;
    expect(payment.phase).toBe('DONE');
    expect(closed.seq).toBeGreaterThan(payment.seq);
    expect(closed.batch).toBe(payment.batch);
    expect(settlement.total_amount).toBe(130 + 4200);
  }, 40_000);

  it('reports a failed end-of-day with the terminal’s reason and tries again after its back-off', async () => {
    terminal.failEndOfDays(1);
    const asked = await api('/fleet/end-of-day', { terminal_id: terminalId });
    expect(asked.status).toBe(200);
    const failed = await nextSettlement();
    expect(failed).toMatchObject({
      status: 'FAILED',
      trigger: 'ON_DEMAND',
      attempt: 1,
      result_code: 'NETWORK_ERROR',
      result_description: 'ZVT A0: receiver not ready',
    });
    expect(Date.parse(failed.retry_at!) - Date.parse(failed.finished_at)).toBe(60_000);
    day.advance(59_000);
    day.advance(1_000);
    const retried = await nextSettlement();
    expect(retried).toMatchObject({ status: 'SUCCESS', trigger: 'ON_DEMAND', attempt: 2 });
  }, 40_000);

  it('runs on demand through `tps fleet end-of-day`', async () => {
    const run = await runTpsToEnd(['fleet', 'end-of-day', terminalId], {
      TPS_BASE_URL: relay.baseUrl,
      TPS_ACCOUNT_USERNAME: relay.account.username,
      TPS_ACCOUNT_PASSWORD: relay.account.password,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(`${terminalId}  end-of-day queued\n`);
    expect(await nextSettlement()).toMatchObject({ status: 'SUCCESS', trigger: 'ON_DEMAND' });
  }, 40_000);
});
