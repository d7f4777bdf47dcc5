/**
 * A fleet reconnecting at once must find room in the listener's accept queue: the kernel
 * drops handshakes beyond it, and those agents wait out TCP's retransmission back-off.
 * Read from the kernel itself (`ss`: a listening socket's Send-Q is its backlog).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../store/sqlite.js';
import { startEmbeddedBroker } from './embedded-broker.js';

function ssAvailable(): boolean {
  try {
    execFileSync('ss', ['-V'], { stdio: 'ignore' });
    return fs.existsSync('/proc/sys/net/core/somaxconn');
  } catch {
    return false;
  }
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.skipIf(!ssAvailable())('the embedded broker listener (needs ss and /proc)', () => {
  it('holds thousands of handshakes for a fleet coming back at once, not Node’s 511', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-backlog-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const store = new SqliteStore(path.join(dir, 'relay.sqlite'));
    cleanups.push(() => store.close());
    const broker = await startEmbeddedBroker({ store, logger: pino({ level: 'silent' }) });
    cleanups.push(() => broker.close());
    const { port } = await broker.listen('127.0.0.1', 0);

    const listening = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' });
    const backlog = Number(listening.trim().split(/\s+/)[2]);
    const somaxconn = Number(fs.readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
    expect(backlog).toBe(Math.min(8192, somaxconn));
    expect(backlog).toBeGreaterThan(511);
  });
});
