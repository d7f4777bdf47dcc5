/**
 * The agent against a real broker (aedes on a TCP port; Mosquitto too when MQTT_URL is set)
 * and the emulated card-reader firmware over the serial protocol on a stream pair. A test
 * "relay" publishes commands and acknowledges reports.
 */
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { emulatedReader, type EmulatedReader } from '../agent/emulated-reader.js';
import type { PrinterPort } from '../agent/ports.js';
import { BROKERS, TestRelay, agentConfig, command, startCommand } from './agent-harness.js';

const silent = pino({ level: 'silent' });

if (!process.env.MQTT_URL) {
  describe.skip('agent link on Mosquitto (set MQTT_URL=mqtt://host:1883 to run)', () => {
    it('runs the same tests as on aedes', () => {});
  });
}

describe.each(BROKERS)('agent link on $name', ({ open }) => {
  let broker: { url: string; stop(): Promise<void> };
  let relay: TestRelay;
  const running: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    broker = await open();
    relay = new TestRelay(broker.url);
    await relay.connected();
  });
  afterEach(async () => {
    for (const stop of running.splice(0)) await stop();
  });
  afterAll(async () => {
    await relay.close();
    await broker.stop();
  });

  async function agent(
    options: { delayMs?: number; printer?: PrinterPort; battery?: boolean } = {},
  ) {
    const terminalId = `T-${randomBytes(4).toString('hex')}`;
    const emulated: EmulatedReader = emulatedReader({
      delayMs: options.delayMs ?? 20,
      ...(options.battery ? {} : { battery: false as const }),
    });
    const runs = new Map<string, Set<number>>();
    emulated.firmware.on('record', (record) => {
      if (record.sequence === 0) return;
      const seen = runs.get(record.transaction_id) ?? new Set<number>();
      runs.set(record.transaction_id, seen.add(record.sequence));
    });
    const config = agentConfig({
      terminal_id: terminalId,
      broker: { url: broker.url, username: terminalId, password: 'x' },
    });
    const instance: RunningAgent = await startAgent(config, {
      reader: emulated.reader,
      ...(options.printer ? { printer: options.printer } : {}),
      logger: silent,
      tuning: { reconnect: { initialMs: 20, maxMs: 200 } },
    });
    running.push(async () => {
      await instance.stop();
      await emulated.close();
    });
    await relay.until(
      () => relay.presence.some((p) => p.terminalId === terminalId && p.connected),
      5000,
      'agent connected',
    );
    return {
      terminalId,
      emulated,
      instance,
      runs,
      send: (c: Parameters<TestRelay['send']>[1]) => relay.send(terminalId, c),
    };
  }

  it('runs a purchase end to end: ack first, then reports in order, seq growing', async () => {
    const a = await agent();
    const start = startCommand('tx-e2e-1');
    a.send(start);
    await relay.until(() => relay.final('tx-e2e-1') !== undefined, 5000, 'result');
    expect(relay.ack(start.command_id)).toEqual({
      command_id: start.command_id,
      outcome: 'ACCEPTED',
    });
    expect(relay.transaction('tx-e2e-1')).toEqual([
      expect.objectContaining({
        phase: 'COMPLETED',
        result_code: 'SUCCESS',
        details: expect.objectContaining({ authorized_amount: 1000 }),
      }),
    ]);
    const seqs = relay.applied
      .filter((entry) => entry.terminalId === a.terminalId)
      .map((entry) => entry.seq);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    await relay.until(
      () => relay.statuses(a.terminalId).at(-1)?.readings.transaction_state === 'READY',
      5000,
      'READY',
    );
    const states = relay.statuses(a.terminalId).map((s) => s.readings.transaction_state);
    expect(states).toContain('PROCESSING');
    expect(a.runs.get('tx-e2e-1')?.size).toBe(1);
  });

  it('pauses at customer identification and continues with a new amount', async () => {
    const a = await agent();
    a.send(startCommand('tx-pause', { pause_on_customer_identified: true }));
    await relay.until(() => relay.transaction('tx-pause').length > 0, 5000, 'pause');
    expect(relay.transaction('tx-pause')[0]).toMatchObject({
      phase: 'CUSTOMER_IDENTIFIED',
      details: { customer_identity: expect.any(Object) },
    });
    a.send(command('transaction.continue', { transaction_id: 'tx-pause', requested_amount: 1500 }));
    await relay.until(() => relay.final('tx-pause') !== undefined, 5000, 'result');
    expect(relay.final('tx-pause')).toMatchObject({
      phase: 'COMPLETED',
      details: { total_amount: 1500 },
    });
  });

  it('applies a re-sent command once, and never runs a transaction twice', async () => {
    const a = await agent();
    const start = startCommand('tx-dup');
    a.send(start);
    relay.publishOnce(a.terminalId, start);
    relay.publishOnce(a.terminalId, { ...start, command_id: 'another-command-id' });
    await relay.until(
      () =>
        relay.final('tx-dup') !== undefined &&
        relay.acks.filter((k) => k.command_id === start.command_id).length >= 2,
    );
    const acked = relay.acks.length;
    relay.publishOnce(a.terminalId, start);
    await relay.until(() => relay.acks.length > acked);
    expect(relay.acks.slice(acked)).toEqual([
      { command_id: start.command_id, outcome: 'ACCEPTED' },
    ]);
    expect(relay.acks.filter((k) => k.command_id === 'another-command-id')).toEqual([
      { command_id: 'another-command-id', outcome: 'ACCEPTED' },
    ]);
    expect(relay.transaction('tx-dup')).toHaveLength(1);
    expect(a.runs.get('tx-dup')?.size).toBe(1);
  });

  it('refuses an expired start, reports it CANCELLED with EXPIRED, and never runs it', async () => {
    const a = await agent();
    const start = startCommand('tx-expired', {
      expires_at: new Date(Date.now() - 1000).toISOString(),
    });
    a.send(start);
    await relay.until(() => relay.final('tx-expired') !== undefined);
    expect(relay.ack(start.command_id)?.outcome).toBe('EXPIRED');
    expect(relay.final('tx-expired')).toMatchObject({ phase: 'CANCELLED', result_code: 'EXPIRED' });
    const again = startCommand('tx-expired');
    a.send(again);
    await relay.until(() => relay.ack(again.command_id) !== undefined);
    expect(relay.ack(again.command_id)?.outcome).toBe('ACCEPTED');
    expect(a.emulated.firmware.memory.get('tx-expired')).toBeUndefined();
  });

  it('cancels a running transaction', async () => {
    const a = await agent({ delayMs: 60_000 });
    a.send(startCommand('tx-cancel'));
    await relay.until(() => a.emulated.firmware.memory.get('tx-cancel')?.phase === 'IN_PROGRESS');
    a.send(command('transaction.cancel', { transaction_id: 'tx-cancel' }));
    await relay.until(() => relay.final('tx-cancel') !== undefined, 5000, 'cancelled');
    expect(relay.final('tx-cancel')).toMatchObject({ phase: 'CANCELLED', result_code: 'ABORTED' });
    expect(a.emulated.firmware.memory.get('tx-cancel')?.phase).toBe('CANCELLED');
  });

  it('reverses a successful transaction on cancel', async () => {
    const a = await agent();
    a.send(startCommand('tx-reverse'));
    await relay.until(() => relay.final('tx-reverse') !== undefined);
    a.send(command('transaction.cancel', { transaction_id: 'tx-reverse' }));
    await relay.until(() => relay.transaction('tx-reverse').length === 2, 5000, 'reversal');
    expect(relay.transaction('tx-reverse').map((r) => `${r.phase} ${r.result_code}`)).toEqual([
      'COMPLETED SUCCESS',
      'CANCELLED REVERSED',
    ]);
    expect(a.emulated.firmware.memory.get('tx-reverse')).toMatchObject({
      phase: 'CANCELLED',
      result_code: 'REVERSED',
    });
    // A repeated cancel changes nothing.
    a.send(command('transaction.cancel', { transaction_id: 'tx-reverse' }));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(relay.transaction('tx-reverse')).toHaveLength(2);
  });

  it('prints, and survives a failing printer', async () => {
    const jobs: number[] = [];
    const printer: PrinterPort = {
      print: async (png) => {
        jobs.push(png.length);
        if (jobs.length === 1) throw Object.assign(new Error('paper out'), { code: 'PAPER_OUT' });
      },
      close: async () => {},
    };
    const a = await agent({ printer });
    const png = Buffer.from('not really a png').toString('base64');
    a.send(command('print', { format: 'PNG', contents: png }));
    a.send(command('print', { format: 'PNG', contents: png }));
    await relay.until(() => jobs.length === 2);
    a.send(startCommand('tx-after-print'));
    await relay.until(() => relay.final('tx-after-print') !== undefined);
  });

  it('ignores invalid messages and keeps working', async () => {
    const a = await agent();
    const topic = `tps/v1/t/${a.terminalId}/cmd`;
    relay.client.publish(topic, 'not json', { qos: 1 });
    relay.client.publish(topic, JSON.stringify({ command: { type: 'reboot' } }), { qos: 1 });
    relay.client.publish(`tps/v1/t/${a.terminalId}/report-ack`, JSON.stringify({ seq: -1 }), {
      qos: 1,
    });
    a.send(startCommand('tx-after-junk'));
    await relay.until(() => relay.final('tx-after-junk') !== undefined);
  });

  it("tells the state after a payment with the reader's screen of then, not the one before", async () => {
    const a = await agent();
    a.send(startCommand('tx-screen'));
    await relay.until(() => relay.final('tx-screen') !== undefined, 5000, 'result');
    await relay.until(
      () => relay.statuses(a.terminalId).at(-1)?.readings.screen_message === 'Approved',
      5000,
      'the screen after the payment',
    );
    // The first report back to READY already says what the reader shows after the payment.
    const statuses = relay.statuses(a.terminalId).map((r) => r.readings);
    const busy = statuses.findIndex((r) => r.transaction_state === 'PROCESSING');
    const ready = statuses.findIndex((r, i) => i > busy && r.transaction_state === 'READY');
    expect(busy).toBeGreaterThanOrEqual(0);
    expect(statuses[ready]?.screen_message).toBe('Approved');
  });

  it('reports battery and charger changes as status', async () => {
    const a = await agent({ battery: true });
    a.emulated.firmware.setBattery(42);
    a.emulated.firmware.plug(true);
    await relay.until(() => {
      const last = relay.statuses(a.terminalId).at(-1)?.readings;
      return (
        last?.battery_percentage === 42 &&
        last.plugged_in === true &&
        last.battery_charging === true
      );
    });
    expect(relay.statuses(a.terminalId).at(-1)?.readings).toMatchObject({
      connected: true,
      transaction_state: 'READY',
    });
  });

  it('answers fast: Nagle is off on the link (sequential round trips well under the 40 ms of a delayed ACK)', async () => {
    const a = await agent();
    const times: number[] = [];
    for (let i = 0; i < 15; i++) {
      const print = command('print', { format: 'PNG', contents: 'AA==' });
      const began = performance.now();
      a.send(print);
      await relay.until(() => relay.ack(print.command_id) !== undefined);
      times.push(performance.now() - began);
    }
    // With Nagle on, every round trip waits for the delayed ACK (40 ms or more); a busy
    // machine slows some trips, never all: the fastest tells, the median may not.
    expect(Math.min(...times)).toBeLessThan(25);
  });
});
