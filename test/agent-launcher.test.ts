/**
 * The launcher (bin/tps-agent-launcher.ts) resolves a start before the release loads, so a
 * release that cannot even load is rolled back too (docs/fleet.md, "The launcher").
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decideLaunch, planLaunch } from '../bin/tps-agent-launcher.js';
import { MAX_TRIAL_BOOTS, readResolvedBoot, recordStartFailure } from '../agent/update-boot.js';
import { switchCurrent } from '../agent/update-release.js';
import { readUpdateState, writeUpdateState } from '../agent/update-state.js';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import { startAedes, tempDir, type TestBroker } from './agent-harness.js';
import {
  UpdateDesk,
  buildRelease,
  serveArchives,
  startUpdatableTerminal,
  until,
  type Supervisor,
} from './support/agent-releases.js';

const now = () => new Date('2026-11-25T00:00:00Z');

describe('the launcher’s decision on an update root', () => {
  /** A root with releases 1.0.0 and 2.0.0, `current` on 2.0.0 and its trial under way. */
  function rootOnTrial(): string {
    const root = tempDir('launcher');
    for (const version of ['1.0.0', '2.0.0']) {
      fs.mkdirSync(path.join(root, 'releases', version, 'bin'), { recursive: true });
      fs.writeFileSync(path.join(root, 'releases', version, 'manifest.json'), '{}');
    }
    switchCurrent(root, '2.0.0');
    writeUpdateState(root, {
      phase: 'trial',
      order_id: 'order-1',
      from: '1.0.0',
      to: '2.0.0',
      boots: 0,
    });
    return root;
  }
  const run = (root: string) => planLaunch(['--root', root, '--config', 'agent.json'], '/x');

  it('takes the root from --root, else its own folder, and passes the rest on', () => {
    expect(planLaunch(['--root', 'r', '--config', 'a.json'], '/opt/tps-agent')).toEqual({
      root: path.resolve('r'),
      args: ['--config', 'a.json'],
      runsAgent: true,
    });
    expect(planLaunch(['--config', 'a.json'], '/opt/tps-agent').root).toBe('/opt/tps-agent');
    // doctor, pair, --version: not a start of the agent, nothing counted.
    expect(planLaunch(['doctor', '--config', 'a.json'], '/o').runsAgent).toBe(false);
    expect(planLaunch(['--version'], '/o').runsAgent).toBe(false);
  });

  it('counts each start of a trial, and past the limit switches current back and asks for a restart', () => {
    const root = rootOnTrial();
    for (let boot = 1; boot <= MAX_TRIAL_BOOTS; boot++) {
      expect(decideLaunch(run(root), now)).toEqual({
        kind: 'run',
        entry: path.join(root, 'current/bin/tps-agent.js'),
        resolved: true,
      });
      expect(readUpdateState(root)).toMatchObject({ phase: 'trial', boots: boot });
      recordStartFailure(root, 'SyntaxError: Unexpected token');
    }
    const outcome = decideLaunch(run(root), now);
    expect(outcome).toMatchObject({ kind: 'restart' });
    expect(fs.readlinkSync(path.join(root, 'current'))).toBe(path.join('releases', '1.0.0'));
    expect(readUpdateState(root)).toMatchObject({
      phase: 'idle',
      last: {
        order_id: 'order-1',
        version: '2.0.0',
        result: 'rolled_back',
        reason: `the release did not start (${MAX_TRIAL_BOOTS} tries): SyntaxError: Unexpected token`,
      },
    });
  });

  it('the release then reads the decision without counting the start again', () => {
    const root = rootOnTrial();
    decideLaunch(run(root), now);
    const before = readUpdateState(root);
    expect(readResolvedBoot(root)).toMatchObject({
      restart: false,
      running: '2.0.0',
      trial: { boots: 1 },
    });
    expect(readUpdateState(root)).toEqual(before);
  });

  it('does not count a start that is not the agent’s (doctor)', () => {
    const root = rootOnTrial();
    const plan = planLaunch(['--root', root, 'doctor', '--config', 'agent.json'], '/x');
    expect(decideLaunch(plan, now)).toMatchObject({ kind: 'run', resolved: false });
    expect(readUpdateState(root)).toMatchObject({ phase: 'trial', boots: 0 });
  });
});

describe('a release that cannot even load', () => {
  const TERMINAL = 't-launcher-1';
  const credential = { username: TERMINAL, password: 'agent-secret' };
  const keys = generateReleaseKeyPair();
  let broker: TestBroker;
  let desk: UpdateDesk;
  let archives: Awaited<ReturnType<typeof serveArchives>>;
  let dir: string;
  let supervisor: Supervisor | undefined;

  beforeAll(async () => {
    broker = await startAedes();
    desk = new UpdateDesk(broker.url);
    archives = await serveArchives(credential);
    dir = tempDir('launcher-e2e');
    const build = (version: string, extra: object = {}) =>
      buildRelease(dir, { version, privateKeyPem: keys.privateKeyPem, ...extra });
    archives.archives.set('1.0.0', await build('1.0.0'));
    archives.archives.set('1.5.0', await build('1.5.0', { health: 'broken' }));
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

  async function terminal(name: string, launcher: boolean) {
    desk.client.publish(`tps/v1/t/${TERMINAL}/update`, '', { qos: 1, retain: true });
    const started = await startUpdatableTerminal({
      root: path.join(dir, name),
      terminalId: TERMINAL,
      broker: { url: broker.url, ...credential },
      first: { archive: archives.archives.get('1.0.0')!, version: '1.0.0' },
      publicKeyPem: keys.publicKeyPem,
      relay: archives.url,
      launcher,
    });
    supervisor = started.supervisor;
    return started;
  }

  it('under the launcher: the trial starts pile up, current goes back, the agent says it did not start', async () => {
    const { root, supervisor } = await terminal('launched', true);
    desk.order(TERMINAL, { order_id: 'broken-1', version: '1.5.0' });
    const status = await desk.outcome(TERMINAL, 'broken-1', 40_000);
    expect(status).toMatchObject({
      running_version: '1.0.0',
      last: { order_id: 'broken-1', version: '1.5.0', result: 'rolled_back' },
    });
    expect(status.last?.reason).toMatch(/the release did not start .*throws as it loads/);
    expect(fs.readlinkSync(path.join(root, 'current'))).toBe(path.join('releases', '1.0.0'));
    // The switch (75), three failed starts of 1.5.0 (1), the roll-back (75).
    expect(supervisor.exits.map((e) => e.code)).toEqual([75, 1, 1, 1, 75]);
  }, 60_000);

  it('without it, the same release is started again and again and never rolled back', async () => {
    const { root, supervisor } = await terminal('bare', false);
    desk.order(TERMINAL, { order_id: 'broken-2', version: '1.5.0' });
    await until(() => supervisor.starts >= MAX_TRIAL_BOOTS + 3, 40_000, 'repeated starts');
    expect(fs.readlinkSync(path.join(root, 'current'))).toBe(path.join('releases', '1.5.0'));
    expect(readUpdateState(root)).toMatchObject({ phase: 'trial', order_id: 'broken-2' });
  }, 60_000);
});
