/**
 * Rollouts with real agent processes under a supervisor that restarts them as systemd
 * does, paired into a cohort on a relay that publishes the releases, orders the waves and
 * reads the agents' update status, as a process of its own: an unhealthy release stops at the first terminal, which
 * rolls back by itself; a good one reaches the whole cohort (docs/fleet.md, "Rollouts").
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import { RolloutView } from '../protocol/index.js';
import { tempDir } from './agent-harness.js';
import type { Supervisor } from './support/agent-releases.js';
import { ARCH, buildRelease, startUpdatableTerminal } from './support/agent-releases.js';
import { runEach } from './support/cli-commands.js';
import { basicAuth, post, tempDataDir } from './support/relay.js';
import { startRelayProcess, type RelayProcess } from './support/relay-process.js';

const keys = generateReleaseKeyPair();
const COHORT = 'cohort-rollout-test';
const ACCOUNT = { username: 'rollout-account', password: 'rollout-account-password' };
/** Releases and rollouts are the operator's (docs/tenants.md). */
const OPERATOR = { username: 'rollout-operator', password: 'rollout-operator-password' };

describe('rollouts to real agents', () => {
  let relay: RelayProcess;
  let dir: string;
  let oldest: string;
  /** The merchant account the relay made at its first start, whose cohort is rolled out to. */
  let accountId: string;
  const terminals: Array<{ terminalId: string; supervisor: Supervisor }> = [];

  const publish = async (archive: string) => {
    const response = await fetch(`${relay.baseUrl}/v1/fleet/releases`, {
      method: 'POST',
      headers: { authorization: basicAuth(OPERATOR), 'content-type': 'application/gzip' },
      body: fs.readFileSync(archive),
    });
    expect(response.status).toBe(200);
  };

  /** Pairs a new agent into the cohort as a field engineer would: code, claim, credential. */
  const pair = async (name: string) => {
    const secret = randomBytes(32).toString('base64url');
    const call = async (operation: string, body: object) => {
      const response = await fetch(`${relay.baseUrl}/v1${operation}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return (await response.json()) as Record<string, unknown>;
    };
    const { code } = await call('/pairing/start', {
      secret_sha256: createHash('sha256').update(secret).digest('hex'),
    });
    const claimed = await post(
      relay.baseUrl,
      'v1',
      '/terminal/claim',
      { code, name, cohort: COHORT },
      ACCOUNT,
    );
    expect(claimed.status).toBe(200);
    const paired = (await call('/pairing/wait', { secret, wait_seconds: 0 })) as {
      terminal_id: string;
      broker: { url: string; username: string; password: string };
    };
    return paired;
  };

  const tps = async (args: string[]) => {
    const [ran] = await runEach([
      {
        args: ['fleet', 'rollout', ...args],
        env: {
          TPS_BASE_URL: relay.baseUrl,
          TPS_OPERATOR_USERNAME: OPERATOR.username,
          TPS_OPERATOR_PASSWORD: OPERATOR.password,
        },
      },
    ]);
    return ran!;
  };

  /** The rollout as the API answers it, once it is no longer running (or `ms` passed). */
  const settled = async (id: string, ms: number) => {
    const by = Date.now() + ms;
    for (;;) {
      const response = await fetch(`${relay.baseUrl}/v1/fleet/rollouts/${id}`, {
        headers: { authorization: basicAuth(ACCOUNT) },
      });
      const { rollout } = (await response.json()) as { rollout: unknown };
      const seen = RolloutView.parse(rollout);
      if (seen.state !== 'running' || Date.now() > by) return seen;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };

  beforeAll(async () => {
    dir = tempDir('rollouts');
    const keyFile = path.join(dir, 'release-key.pem');
    fs.writeFileSync(keyFile, keys.publicKeyPem);
    relay = await startRelayProcess({
      TPS_DATA_DIR: tempDataDir(),
      TPS_ACCOUNT_USERNAME: ACCOUNT.username,
      TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
      TPS_OPERATOR_USERNAME: OPERATOR.username,
      TPS_OPERATOR_PASSWORD: OPERATOR.password,
      TPS_DEFAULT_SIMULATOR: 'false',
      TPS_RELEASE_PUBLIC_KEY: keyFile,
    });
    const build = (version: string, health: 'healthy' | 'unhealthy' = 'healthy') =>
      buildRelease(dir, { version, privateKeyPem: keys.privateKeyPem, health });
    const accounts = await post(relay.baseUrl, 'v1', '/account/list', {}, OPERATOR);
    accountId = (accounts.body.accounts as Array<{ account_id: string; kind: string }>).find(
      (account) => account.kind === 'merchant',
    )!.account_id;
    oldest = await build('1.0.0');
    await publish(await build('1.1.0'));
    await publish(await build('1.2.0', 'unhealthy'));
    for (const name of ['till-a', 'till-b', 'till-c']) {
      const paired = await pair(name);
      const { supervisor } = await startUpdatableTerminal({
        root: path.join(dir, name),
        terminalId: paired.terminal_id,
        broker: paired.broker,
        first: { archive: oldest, version: '1.0.0' },
        publicKeyPem: keys.publicKeyPem,
        relay: relay.baseUrl,
      });
      terminals.push({ terminalId: paired.terminal_id, supervisor });
    }
    // Each agent up and connected: its presence reached the relay.
    let seen: string[] = [];
    const connected = async () => {
      const found = await Promise.all(
        terminals.map((t) =>
          post(relay.baseUrl, 'v1', '/terminal/status', { terminal_id: t.terminalId }, ACCOUNT),
        ),
      );
      seen = found.map((answer) => `${answer.status} ${JSON.stringify(answer.body)}`);
      return found.every(
        (answer) => answer.status === 200 && answer.body.status?.connected === true,
      );
    };
    const upBy = Date.now() + 20_000;
    while (!(await connected())) {
      if (Date.now() > upBy)
        throw new Error(`the three agents did not connect: ${seen.join('; ')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all(terminals.map(({ supervisor }) => supervisor.stop()));
    await relay?.kill('SIGTERM');
  });

  /** Each terminal's last update outcome, as `/fleet/facts` shows it. */
  const lastUpdateOutcomes = async () => {
    const answer = await post(relay.baseUrl, 'v1', '/fleet/facts', { cohort: COHORT }, ACCOUNT);
    expect(answer.status).toBe(200);
    return new Map(
      (
        answer.body.terminals as Array<{ terminal_id: string; last_update_outcome: string | null }>
      ).map((t) => [t.terminal_id, t.last_update_outcome]),
    );
  };

  it('an unhealthy release: the first wave’s agent rolls back by itself, the rollout pauses, no other agent is ordered', async () => {
    const started = await tps([
      'start',
      '--account-id',
      accountId,
      '--version',
      '1.2.0',
      '--cohort',
      COHORT,
      '--arch',
      ARCH,
      '--json',
    ]);
    expect(started.code, started.stderr).toBe(0);
    const { id } = RolloutView.parse(JSON.parse(started.stdout));
    const seen = await settled(id, 45_000);
    expect(seen).toMatchObject({ state: 'paused', wave: 1 });
    expect(seen.terminals).toHaveLength(1);
    expect(seen.terminals[0]).toMatchObject({ result: 'rolled_back' });
    expect(seen.terminals[0]!.reason).toMatch(/not healthy within 5 s/);
    // What an operator reads.
    const shown = await tps(['status', id]);
    expect(shown.stdout).toContain(
      `${id}  1.2.0 (${ARCH}) to ${COHORT} of ${accountId}: paused, wave 1 of 3`,
    );
    expect(shown.stdout).toMatch(/paused: wave 1: 1 of 1 failed .*rolled_back: not healthy/);
    // The agent switched to 1.2.0 and back by itself; the others never restarted.
    const first = terminals.find((t) => t.terminalId === seen.terminals[0]!.terminal_id)!;
    expect(first.supervisor.exits.map((e) => e.code)).toEqual([75, 75]);
    for (const other of terminals.filter((t) => t !== first)) {
      expect(other.supervisor.exits).toEqual([]);
    }
    // The fleet facts show each terminal's last update as its agent reported it.
    expect(await lastUpdateOutcomes()).toEqual(
      new Map(terminals.map((t) => [t.terminalId, t === first ? 'rolled_back' : null])),
    );
  }, 60_000);

  it('a good release: every agent of the cohort ends on it, wave after wave', async () => {
    const started = await tps([
      'start',
      '--account-id',
      accountId,
      '--version',
      '1.1.0',
      '--cohort',
      COHORT,
      '--arch',
      ARCH,
      '--json',
    ]);
    expect(started.code, started.stderr).toBe(0);
    const { id } = RolloutView.parse(JSON.parse(started.stdout));
    const seen = await settled(id, 80_000);
    expect(seen.state).toBe('completed');
    // One, then 10 % of three (one), then the rest (one).
    expect(seen.terminals.map((t) => t.wave)).toEqual([1, 2, 3]);
    expect(seen.terminals.every((t) => t.result === 'installed')).toBe(true);
    expect(new Set(seen.terminals.map((t) => t.terminal_id))).toEqual(
      new Set(terminals.map((t) => t.terminalId)),
    );
    expect(await lastUpdateOutcomes()).toEqual(
      new Map(terminals.map((t) => [t.terminalId, 'installed'])),
    );
    // The paused rollout it superseded.
    const list = await tps(['status']);
    expect(list.stdout).toMatch(/superseded/);
    // Each terminal's own record of where it runs: `current` points at 1.1.0.
    for (const name of ['till-a', 'till-b', 'till-c']) {
      expect(fs.readlinkSync(path.join(dir, name, 'current'))).toBe(path.join('releases', '1.1.0'));
    }
  }, 100_000);
});
