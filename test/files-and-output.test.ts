/**
 * What the relay leaves on disk and prints holds secrets only where only its user reads
 * them: the data directory (webhook secrets, the token key, card tokens) is 0700 and its
 * files 0600 whatever the umask, with a warning at start for a directory or file left
 * wider; the start-up banner writes generated passwords to a terminal, or else to a 0600
 * file whose path it prints; `/ready` names a failing check's category, never the store's
 * error text (host and user names), which goes to the log.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loggerOptions } from '../cloud/logging.js';
import { LOCK_FILE } from '../cloud/store/data-dir-lock.js';
import { runTps } from './support/e2e-parts.js';
import { post, startTestRelay, tempDataDir, type TestRelay } from './support/relay.js';

const mode = (file: string) => fs.statSync(file).mode & 0o777;

/** A logger whose JSON lines are kept, as the relay writes them. */
function capturedLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      callback();
    },
  });
  return { logger: pino(loggerOptions('info'), stream), lines };
}

let relay: TestRelay | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await relay?.close().catch(() => undefined);
  relay = undefined;
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the data directory', () => {
  it('is made 0700, its store and lock 0600, whatever the umask', async () => {
    const parent = tempDataDir();
    dirs.push(parent);
    const dataDir = path.join(parent, 'data');
    const umask = process.umask(0o022);
    try {
      relay = await startTestRelay({}, dataDir);
    } finally {
      process.umask(umask);
    }
    // Written to: the WAL and its index exist now, and take the store file's mode.
    const created = await relay.newSimulator();
    expect(created.terminal_id).toBeDefined();
    expect(mode(dataDir)).toBe(0o700);
    for (const file of ['relay.sqlite', 'relay.sqlite-wal', 'relay.sqlite-shm', LOCK_FILE]) {
      const full = path.join(dataDir, file);
      if (fs.existsSync(full)) expect(mode(full), file).toBe(0o600);
    }
    expect(fs.existsSync(path.join(dataDir, 'relay.sqlite-wal'))).toBe(true);
  });

  it('warns at start when the directory or the store is readable by others', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    fs.chmodSync(dataDir, 0o755);
    fs.writeFileSync(path.join(dataDir, 'relay.sqlite'), '', { mode: 0o644 });
    fs.chmodSync(path.join(dataDir, 'relay.sqlite'), 0o644);
    const { logger, lines } = capturedLogger();
    relay = await startTestRelay({}, dataDir, { logger });
    const warnings = lines.filter((l) => l.level === 40 && /wider/.test(String(l.msg)));
    expect(warnings.map((w) => [w.path, w.mode])).toEqual([
      [dataDir, '0755'],
      [path.join(dataDir, 'relay.sqlite'), '0644'],
    ]);
  });
});

describe('the start-up banner', () => {
  it('writes generated passwords to a 0600 file, not to a standard error that is no terminal', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const child = runTps(['cloud'], {
      TPS_HOST: '127.0.0.1',
      TPS_PORT: '0',
      TPS_MQTT_PORT: '0',
      TPS_DATA_DIR: dataDir,
      TPS_SIMULATOR_MODE: 'in-process',
      TPS_ACCOUNT_USERNAME: '',
      TPS_ACCOUNT_PASSWORD: '',
    });
    try {
      const deadline = Date.now() + 20_000;
      while (!/More simulated terminals/.test(child.output()) && Date.now() < deadline) {
        if (!child.running) throw new Error(`the relay exited:\n${child.output()}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const output = child.output();
      const file = /written to (\S+) \(mode 0600/.exec(output)?.[1];
      expect(file, output).toBeDefined();
      expect(mode(file!)).toBe(0o600);
      const text = fs.readFileSync(file!, 'utf8');
      const passwords = [...text.matchAll(/password (\S+)/g)].map((m) => m[1]!);
      const usernames = [...text.matchAll(/username (\S+)/g)].map((m) => m[1]!);
      // The account's, the operator's and the simulated terminal's.
      expect(passwords).toHaveLength(3);
      expect(text).toContain('Operator credential (shown this once');
      for (const password of passwords) expect(output).not.toContain(password);
      // The file holds working credentials: the account's creates a simulator.
      const baseUrl = /listening on (https?:\/\/\S+?\/pos)\//.exec(output)![1]!;
      // The banner names the console (served from that path: test/console-http.test.ts).
      expect(/Console: (\S+)/.exec(output)?.[1]).toBe(baseUrl.replace(/\/pos$/, '/console/'));
      const created = await post(
        baseUrl,
        'v1',
        '/simulator/create',
        {},
        {
          username: usernames[0]!,
          password: passwords[0]!,
        },
      );
      expect(created.status).toBe(200);
    } finally {
      await child.stop();
    }
  }, 30_000);
});

describe('GET /ready', () => {
  it('names the store check’s category, and logs the error itself', async () => {
    const { logger, lines } = capturedLogger();
    relay = await startTestRelay({}, undefined, { logger });
    dirs.push(relay.dataDir);
    const readyUrl = relay.baseUrl.replace(/\/pos$/, '/ready');
    expect((await fetch(readyUrl)).status).toBe(200);
    // The store fails underneath: its connection is closed.
    await relay.store.close();
    const answer = await fetch(readyUrl);
    expect(answer.status).toBe(503);
    const body = (await answer.json()) as { checks: Record<string, unknown> };
    expect(body.checks.store).toBe('store unreachable');
    const logged = lines.find((l) => l.msg === 'readiness: store unreachable');
    expect(JSON.stringify(logged?.err)).toMatch(/not open|closed/i);
  });
});
