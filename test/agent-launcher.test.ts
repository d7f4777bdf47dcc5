/**
 * The launcher (bin/tps-agent-launcher.ts) resolves a start before the release loads, on a
 * Node.js that is not the release's, so a release that cannot even load, or whose Node.js
 * cannot start, is rolled back too (docs/fleet.md, "The launcher").
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decideLaunch, planLaunch, runtimeProblem } from '../bin/tps-agent-launcher.js';
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
  const run = (root: string) => planLaunch(['--root', root, '--config', 'agent.json']);

  it('takes the root from --root, else the packaged layout’s, and passes the rest on', () => {
    expect(planLaunch(['--root', 'r', '--config', 'a.json'])).toEqual({
      root: path.resolve('r'),
      args: ['--config', 'a.json'],
      runsAgent: true,
    });
    expect(planLaunch(['--config', 'a.json']).root).toBe('/var/lib/tps-agent/update');
    // doctor, pair, --version: not a start of the agent, nothing counted.
    expect(planLaunch(['doctor', '--config', 'a.json']).runsAgent).toBe(false);
    expect(planLaunch(['--version']).runsAgent).toBe(false);
  });

  it('runs current on the release’s own Node.js, and on its own where the release brings none', () => {
    const root = rootOnTrial();
    expect(decideLaunch(run(root), now)).toMatchObject({ runtime: process.execPath });
    const runtime = path.join(root, 'releases/2.0.0/runtime/node');
    fs.mkdirSync(path.dirname(runtime));
    fs.writeFileSync(runtime, '', { mode: 0o755 });
    expect(decideLaunch(run(root), now)).toMatchObject({
      runtime: path.join(root, 'current/runtime/node'),
    });
  });

  it('asks a release’s Node.js whether it runs before a trial’s start, and says why not', () => {
    expect(runtimeProblem(process.execPath)).toBeUndefined();
    const dir = tempDir('launcher-runtime');
    const cut = path.join(dir, 'node');
    fs.writeFileSync(cut, Buffer.concat([Buffer.from('7f454c46', 'hex'), Buffer.alloc(60)]), {
      mode: 0o755,
    });
    // Not an executable the kernel takes (execvp then tries it as a script).
    expect(runtimeProblem(cut)).toMatch(/^its Node\.js did not start: /);
    const failing = path.join(dir, 'fails');
    fs.writeFileSync(failing, '#!/bin/sh\necho "cannot run here" >&2\nexit 3\n', { mode: 0o755 });
    expect(runtimeProblem(failing)).toBe(
      'its Node.js did not start: it exited with code 3: cannot run here',
    );
  });

  it('counts each start of a trial, and past the limit switches current back and asks for a restart', () => {
    const root = rootOnTrial();
    for (let boot = 1; boot <= MAX_TRIAL_BOOTS; boot++) {
      expect(decideLaunch(run(root), now)).toEqual({
        kind: 'run',
        entry: path.join(root, 'current/bin/tps-agent.js'),
        runtime: process.execPath,
        resolved: true,
        trial: true,
      });
      expect(readUpdateState(root)).toMatchObject({ phase: 'trial', boots: boot });
      recordStartFailure(root, 'SyntaxError: Unexpected token \x7fELF');
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
        // The control character as an escape: the outcome stays readable.
        reason: `the release did not start (${MAX_TRIAL_BOOTS} tries): SyntaxError: Unexpected token \\x7fELF`,
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
    const plan = planLaunch(['--root', root, 'doctor', '--config', 'agent.json']);
    expect(decideLaunch(plan, now)).toMatchObject({ kind: 'run', resolved: false, trial: false });
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
    archives.archives.set('1.6.0', await build('1.6.0', { runtime: 'broken' }));
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

  it('under the launcher: one process, the launcher replaced by the release it judged', async () => {
    const seen = desk.presence.length;
    const { supervisor } = await terminal('one-process', true);
    await until(
      () => desk.presence.slice(seen).some((p) => p.terminalId === TERMINAL && p.connected),
      20_000,
      'the agent connected',
    );
    const pid = supervisor.pid!;
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    expect(cmdline).toContain(path.join(dir, 'one-process', 'current/bin/tps-agent.js'));
    expect(cmdline.some((word) => word.includes('tps-agent-launcher'))).toBe(false);
    // Nothing of the launcher runs beside it: no Node.js child (tsx, which runs the tests'
    // TypeScript, keeps an esbuild child of its own).
    const nodeChildren = fs
      .readdirSync(`/proc/${pid}/task`)
      .flatMap((task) => fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' '))
      .filter((child) => child.trim() !== '')
      .filter((child) => {
        try {
          return fs.readlinkSync(`/proc/${child}/exe`) === process.execPath;
        } catch {
          return false; // gone meanwhile
        }
      });
    expect(nodeChildren).toEqual([]);
    expect(supervisor.exits).toEqual([]);
  }, 30_000);

  it('under the launcher: the trial starts pile up, current goes back, the roll-back says so', async () => {
    const { root, supervisor } = await terminal('launched', true);
    desk.order(TERMINAL, { order_id: 'broken-1', version: '1.5.0' });
    const status = await desk.outcome(TERMINAL, 'broken-1', 40_000);
    expect(status).toMatchObject({
      running_version: '1.0.0',
      last: {
        order_id: 'broken-1',
        version: '1.5.0',
        result: 'rolled_back',
        // Each start loaded the release and stopped; the next start's judgement counted it.
        reason: `did not prove healthy in ${MAX_TRIAL_BOOTS} starts`,
      },
    });
    expect(fs.readlinkSync(path.join(root, 'current'))).toBe(path.join('releases', '1.0.0'));
    // The switch (75), three failed starts of 1.5.0 (1), the roll-back (75).
    expect(supervisor.exits.map((e) => e.code)).toEqual([75, 1, 1, 1, 75]);
  }, 60_000);

  it('under the launcher: a release whose own Node.js cannot start is rolled back, the launcher on its Node.js', async () => {
    const { root, supervisor } = await terminal('runtime', true);
    desk.order(TERMINAL, { order_id: 'runtime-1', version: '1.6.0' });
    const status = await desk.outcome(TERMINAL, 'runtime-1', 40_000);
    expect(status).toMatchObject({
      running_version: '1.0.0',
      last: { order_id: 'runtime-1', version: '1.6.0', result: 'rolled_back' },
    });
    // Seen before the exec, on the launcher's Node.js, with the reason.
    expect(status.last?.reason).toMatch(
      /^the release did not start \(3 tries\): its Node\.js did not start: /,
    );
    expect(fs.readlinkSync(path.join(root, 'current'))).toBe(path.join('releases', '1.0.0'));
    // The switch (75), three starts whose Node.js failed (1), the roll-back (75).
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
