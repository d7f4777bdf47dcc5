/**
 * Updates of real agent processes under a supervisor that restarts them as systemd does:
 * a good release is installed and confirmed, an unhealthy one rolls back by itself, a
 * tampered one is refused before anything is installed (docs/fleet.md, "The updater").
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import {
  TestRelay,
  startAedes,
  startCommand,
  tempDir,
  writeConfig,
  type TestBroker,
} from './agent-harness.js';
import type { Supervisor } from './support/agent-releases.js';
import {
  UpdateDesk,
  buildRelease,
  serveArchives,
  startUpdatableTerminal,
  until,
} from './support/agent-releases.js';
import { post, startTestRelay } from './support/relay.js';
import { tpsArgv } from './support/tps-command.js';

const TERMINAL = 't-update-1';
const credential = { username: TERMINAL, password: 'agent-secret' };
const keys = generateReleaseKeyPair();

describe('agent updates', () => {
  let broker: TestBroker;
  let desk: UpdateDesk;
  let archives: Awaited<ReturnType<typeof serveArchives>>;
  let dir: string;
  let supervisor: Supervisor | undefined;

  beforeAll(async () => {
    broker = await startAedes();
    desk = new UpdateDesk(broker.url);
    archives = await serveArchives(credential);
    dir = tempDir('update');
    const build = (version: string, extra: object = {}) =>
      buildRelease(dir, { version, privateKeyPem: keys.privateKeyPem, ...extra });
    archives.archives.set('1.0.0', await build('1.0.0'));
    archives.archives.set('1.1.0', await build('1.1.0'));
    archives.archives.set('1.2.0', await build('1.2.0', { health: 'unhealthy' }));
    archives.archives.set(
      '1.3.0',
      await buildRelease(dir, {
        version: '1.3.0',
        privateKeyPem: generateReleaseKeyPair().privateKeyPem,
      }),
    );
    archives.archives.set('1.4.0', await build('1.4.0', { tamperFile: true }));
  });

  afterEach(async () => {
    await supervisor?.stop();
    supervisor = undefined;
  });

  afterAll(async () => {
    await desk?.close();
    await archives?.close();
    await broker?.stop();
  });

  /** A terminal on release 1.0.0, its agent started by the supervisor. */
  async function terminalOn100(
    name: string,
    env: Record<string, string> = {},
    over: {
      readerDelayMs?: number;
      terminalId?: string;
      agentCredential?: typeof credential;
      relay?: string;
    } = {},
  ) {
    const terminalId = over.terminalId ?? TERMINAL;
    // An order left from another test must not be taken for this one's.
    desk.client.publish(`tps/v1/t/${terminalId}/update`, '', { qos: 1, retain: true });
    const started = await startUpdatableTerminal({
      root: path.join(dir, name),
      terminalId,
      broker: { url: broker.url, ...(over.agentCredential ?? credential) },
      first: { archive: archives.archives.get('1.0.0')!, version: '1.0.0' },
      publicKeyPem: keys.publicKeyPem,
      relay: over.relay ?? archives.url,
      env,
      ...(over.readerDelayMs !== undefined ? { readerDelayMs: over.readerDelayMs } : {}),
    });
    supervisor = started.supervisor;
    return started;
  }

  const releases = (root: string) => fs.readdirSync(path.join(root, 'releases')).sort();
  const current = (root: string) => fs.readlinkSync(path.join(root, 'current'));

  it('a good release: installed beside the running one, switched to, confirmed healthy', async () => {
    const { root, supervisor } = await terminalOn100('good');
    desk.order(TERMINAL, { order_id: 'good-1', version: '1.1.0' });
    const status = await desk.outcome(TERMINAL, 'good-1');
    expect(status).toMatchObject({
      running_version: '1.1.0',
      last: { order_id: 'good-1', version: '1.1.0', result: 'installed' },
    });
    expect(current(root)).toBe(path.join('releases', '1.1.0'));
    expect(releases(root)).toEqual(['1.0.0', '1.1.0']);
    // It restarted once, asking for it with its exit code, and told the relay its new version.
    expect(supervisor.exits).toEqual([{ code: 75, signal: null }]);
    expect(desk.presence.filter((p) => p.connected).at(-1)?.agent_version).toBe('1.1.0');
  });

  it('a release that fails its health check: the agent switches back by itself and says why', async () => {
    const { root, supervisor } = await terminalOn100('unhealthy');
    desk.order(TERMINAL, { order_id: 'bad-1', version: '1.2.0' });
    const status = await desk.outcome(TERMINAL, 'bad-1');
    expect(status).toMatchObject({
      running_version: '1.0.0',
      last: { order_id: 'bad-1', version: '1.2.0', result: 'rolled_back' },
    });
    expect(status.last?.reason).toMatch(/not healthy within 5 s: .*reader does not answer/);
    expect(current(root)).toBe(path.join('releases', '1.0.0'));
    // Restarted into 1.2.0, then back into 1.0.0; the same order is not tried again.
    expect(supervisor.exits.map((e) => e.code)).toEqual([75, 75]);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(supervisor.starts).toBe(3);
  });

  it('never switches during a payment: the update waits until the payment has ended', async () => {
    const { supervisor } = await terminalOn100('payment', {}, { readerDelayMs: 3000 });
    const relay = new TestRelay(broker.url);
    try {
      await relay.connected();
      await until(() => desk.latest(TERMINAL)?.phase === 'idle', 10_000, 'the agent up');
      const start = startCommand('tx-during-update');
      relay.send(TERMINAL, start);
      await relay.until(() => relay.ack(start.command_id) !== undefined, 5000, 'the start taken');
      const startedAt = Date.now();
      desk.order(TERMINAL, { order_id: 'during-payment', version: '1.1.0' });
      await desk.outcome(TERMINAL, 'during-payment');
      const switching = desk.statuses.find(
        (s) => s.order_id === 'during-payment' && s.phase === 'switching',
      );
      expect(desk.statuses.some((s) => s.phase === 'waiting')).toBe(true);
      // The payment takes 3 s; the release was ready long before, the switch waited for it.
      expect(Date.parse(switching!.at) - startedAt).toBeGreaterThanOrEqual(2500);
      await relay.until(() => relay.final('tx-during-update') !== undefined, 10_000, 'its end');
      expect(relay.final('tx-during-update')).toMatchObject({
        phase: 'COMPLETED',
        result_code: 'SUCCESS',
      });
      expect(supervisor.exits).toEqual([{ code: 75, signal: null }]);
    } finally {
      await relay.close();
    }
  });

  it('from the relay itself: published there, downloaded with the agent’s own credential', async () => {
    const keyFile = path.join(dir, 'relay-release-key.pem');
    fs.writeFileSync(keyFile, keys.publicKeyPem);
    const relay = await startTestRelay({ releasePublicKey: keyFile });
    try {
      const published = await fetch(`${relay.baseUrl}/v1/fleet/releases`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${relay.operator.username}:${relay.operator.password}`).toString('base64')}`,
          'content-type': 'application/gzip',
        },
        body: fs.readFileSync(archives.archives.get('1.1.0')!),
      });
      expect(published.status).toBe(200);
      const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account);
      const { agent } = created.body as { agent: typeof credential };
      const { supervisor } = await terminalOn100(
        'from-relay',
        {},
        {
          terminalId: agent.username,
          agentCredential: { username: agent.username, password: agent.password },
          relay: relay.baseUrl,
        },
      );
      const standInRequests = archives.requests.length;
      desk.order(agent.username, { order_id: 'from-relay', version: '1.1.0' });
      const status = await desk.outcome(agent.username, 'from-relay');
      expect(status).toMatchObject({
        running_version: '1.1.0',
        last: { order_id: 'from-relay', result: 'installed' },
      });
      expect(supervisor.exits).toEqual([{ code: 75, signal: null }]);
      // Not from the stand-in archive server: from the relay.
      expect(archives.requests.length).toBe(standInRequests);
    } finally {
      await relay.close();
    }
  });

  it('an agent without an update section refuses orders and says why', async () => {
    const root = path.join(dir, 'no-updates');
    fs.mkdirSync(root);
    const configFile = writeConfig(root, {
      terminal_id: 't-update-none',
      broker: { url: broker.url, ...credential },
      reader: { emulated: { state_file: 'reader.json', delay_ms: 100 } },
      data_dir: 'data',
    });
    const child = spawn(process.execPath, tpsArgv(['agent', '--config', configFile]), {
      cwd: path.resolve(import.meta.dirname, '..'),
      stdio: 'ignore',
    });
    try {
      desk.order('t-update-none', { order_id: 'no-updates', version: '1.1.0' });
      const status = await desk.outcome('t-update-none', 'no-updates');
      expect(status.running_version).toBeUndefined();
      expect(status.last).toMatchObject({ result: 'refused', version: '1.1.0' });
      expect(status.last?.reason).toMatch(/updates are not configured/);
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill('SIGKILL');
    }
  });

  // Power loss at each step (SIGKILL, once): the agent comes back runnable on one of the
  // two releases, the update finished or undone, never half-way.
  it.each([
    ['downloaded', '1.1.0', 'installed', '1.1.0'],
    ['unpacked', '1.1.0', 'installed', '1.1.0'],
    ['verified', '1.1.0', 'installed', '1.1.0'],
    ['installed', '1.1.0', 'installed', '1.1.0'],
    ['switching', '1.1.0', 'failed', '1.0.0'],
    ['switched', '1.1.0', 'installed', '1.1.0'],
    ['trial-started', '1.1.0', 'installed', '1.1.0'],
    ['healthy', '1.1.0', 'installed', '1.1.0'],
    ['rolling-back', '1.2.0', 'rolled_back', '1.0.0'],
    ['rolled-back', '1.2.0', 'rolled_back', '1.0.0'],
  ])(
    'killed at "%s" (to %s): comes back runnable, the update %s, on %s',
    async (step, version, result, endsOn) => {
      const marker = path.join(dir, `killed-${step}`);
      const { root, supervisor } = await terminalOn100(`kill-${step}`, {
        TPS_TEST_UPDATE_KILL_AT: `${step}:${marker}`,
      });
      const order = `kill-${step}`;
      desk.order(TERMINAL, { order_id: order, version });
      const status = await desk.outcome(TERMINAL, order, 40_000);
      expect(fs.existsSync(marker), 'killed at the step').toBe(true);
      expect(supervisor.exits.some((e) => e.signal === 'SIGKILL')).toBe(true);
      expect(status).toMatchObject({ running_version: endsOn, last: { version, result } });
      expect(current(root)).toBe(path.join('releases', endsOn));
      for (const file of ['manifest.json', 'bin/tps-agent.js']) {
        expect(fs.existsSync(path.join(root, 'current', file))).toBe(true);
      }
      expect(
        JSON.parse(fs.readFileSync(path.join(root, 'update-state.json'), 'utf8')),
      ).toMatchObject({ phase: 'idle' });
    },
    60_000,
  );

  it.each([
    ['signed with another key', '1.3.0', /signature does not verify/],
    ['a file changed after signing', '1.4.0', /bin\/tps-agent.js does not match its hash/],
  ])('a tampered release (%s) is refused before install', async (_what, version, reason) => {
    const { root, supervisor } = await terminalOn100(`tampered-${version}`);
    desk.order(TERMINAL, { order_id: `tampered-${version}`, version });
    const status = await desk.outcome(TERMINAL, `tampered-${version}`);
    expect(status).toMatchObject({
      running_version: '1.0.0',
      last: { version, result: 'refused' },
    });
    expect(status.last?.reason).toMatch(reason);
    expect(releases(root)).toEqual(['1.0.0']);
    expect(fs.existsSync(path.join(root, 'incoming'))).toBe(false);
    expect(current(root)).toBe(path.join('releases', '1.0.0'));
    expect(supervisor.starts).toBe(1);
    expect(supervisor.exits).toEqual([]);
  });
});
