import net from 'node:net';
import { Aedes } from 'aedes';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Timers } from '../common/clock.js';
import { AgentLink } from './link.js';

const NEVER = 1e9;

/** Timers that only record what they are asked, until the test fires them (NEVER: ignored). */
class RecordingTimers implements Timers {
  readonly waits: number[] = [];
  private readonly pending = new Map<number, () => void>();
  private next = 1;
  setTimeout(callback: () => void, ms: number): unknown {
    if (ms >= NEVER) return 0;
    this.waits.push(ms);
    this.pending.set(this.next, callback);
    return this.next++;
  }
  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  fire(): void {
    const [id, callback] = [...this.pending][0] ?? [];
    if (id === undefined || !callback) throw new Error('no timer pending');
    this.pending.delete(id);
    callback();
  }
}

const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
};

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('agent link reconnects', () => {
  it('waits a capped, jittered, growing time between attempts; starts over after a stable connection', async () => {
    const port = await freePort();
    const timers = new RecordingTimers();
    let now = Date.parse('2026-03-01T12:00:00.000Z');
    const link = new AgentLink({
      terminalId: 'T-backoff',
      broker: {
        url: `mqtt://127.0.0.1:${port}`,
        username: 'T-backoff',
        password: 'x',
        keepalive_s: 30,
      },
      journal: {
        id: '0123456789abcdef',
        pendingReports: () => [],
        pendingReportTexts: () => [],
        previousReport: () => 0,
        dropReport: () => false,
      },
      onCommand: () => {},
      logger: pino({ level: 'silent' }),
      clock: { now: () => new Date(now) },
      timers,
      backoff: { initialMs: 100, maxMs: 400, random: () => 0.5 },
      resendMs: NEVER,
    });
    cleanups.push(() => link.stop());
    link.start();
    for (let attempt = 1; attempt <= 4; attempt++) {
      await until(() => timers.waits.length === attempt, `attempt ${attempt} to fail`);
      if (attempt < 4) timers.fire();
    }
    // d = 100, 200, 400, 400 (capped); the wait is d/2 + random × d/2.
    expect(timers.waits).toEqual([75, 150, 300, 300]);

    const broker = await Aedes.createBroker();
    const server = net.createServer({ noDelay: true }, (socket) => broker.handle(socket));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
    const stopBroker = async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await closed;
    };
    cleanups.push(stopBroker);
    timers.fire();
    await until(() => link.connected, 'connected');

    now += 60_000; // up for a minute: the next outage starts the back-off over
    await stopBroker();
    await until(() => timers.waits.length === 5, 'the next wait');
    expect(timers.waits[4]).toBe(75);
  });
});
