/**
 * Local mode's POS verifiers from the relay to the agent, over the embedded broker, with
 * an MQTT client in the agent's place feeding the agent's own store of verifiers and its
 * authenticator: a terminal with local mode on gets the verifiers of its own POS
 * credentials only, never the account's; a rotation and a revocation reach it; an older
 * set delivered again brings nothing back; the set survives a restart; a terminal with
 * local mode off holds none; no agent reads another terminal's verifiers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LocalCredentialsMessage,
  terminalTopics,
  type TerminalCreateResponse,
} from '../protocol/index.js';
import { VerifierAuthenticator } from '../agent/local-api/authenticator.js';
import { LocalCredentials } from '../agent/local-api/credentials.js';
import { runEach } from './support/cli-commands.js';
import { TEST_ACCOUNT, post, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
const dirs: string[] = [];
beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const account = (op: string, body: object) => post(relay.baseUrl, 'v1', op, body, relay.account);
const basic = (username: string, password: string) =>
  `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

async function register(): Promise<TerminalCreateResponse> {
  const res = await account('/terminal/create', {});
  expect(res.status).toBe(200);
  return res.body;
}

/** An MQTT client in the agent's place, keeping every verifier set it hears. */
async function agentOf(t: TerminalCreateResponse) {
  const client: MqttClient = mqtt.connect(t.agent.broker_url, {
    username: t.agent.username,
    password: t.agent.password,
    clientId: `agent-${t.terminal_id}`,
    reconnectPeriod: 0,
  });
  await new Promise((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  const heard: LocalCredentialsMessage[] = [];
  const waiters = new Set<() => void>();
  client.on('message', (topic, payload) => {
    if (topic !== terminalTopics(t.terminal_id).localCredentials) return;
    heard.push(LocalCredentialsMessage.parse(JSON.parse(payload.toString())));
    for (const wake of waiters) wake();
  });
  const granted = await client.subscribeAsync(terminalTopics(t.terminal_id).localCredentials, {
    qos: 1,
  });
  expect(granted[0]?.qos).toBe(1);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tps-local-credentials-'));
  dirs.push(dataDir);
  const store = LocalCredentials.open(dataDir, pino({ level: 'silent' }));
  return {
    client,
    heard,
    dataDir,
    store,
    authenticator: new VerifierAuthenticator(store),
    /** The first set heard that `done` accepts, handed to the agent's store. */
    async next(done: (m: LocalCredentialsMessage) => boolean): Promise<LocalCredentialsMessage> {
      for (;;) {
        const found = heard.find(done);
        if (found) {
          store.received(found);
          return found;
        }
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            resolve();
          };
          waiters.add(wake);
        });
      }
    },
  };
}

describe('POS verifiers delivered to the agent', () => {
  it('reach the terminal with local mode on, follow rotation and revocation, never go back', async () => {
    const a = await register();
    const b = await register();
    const agentA = await agentOf(a);
    const agentB = await agentOf(b);

    // Local mode off: the set is empty.
    const off = await agentA.next(() => true);
    expect(off.credentials).toEqual([]);

    const set = await account('/fleet/config/set', {
      scope: { terminal_id: a.terminal_id },
      config: { local_api: { enabled: true } },
    });
    expect(set.status).toBe(200);
    const on = await agentA.next((m) => m.credentials.length > 0);
    expect(on.credentials).toEqual([{ username: a.username, verifier: expect.any(String) }]);
    expect(JSON.stringify(agentA.heard)).not.toContain(relay.account.username);
    expect(await agentA.authenticator.check(basic(a.username, a.password), '10.0.0.7')).toEqual({
      ok: true,
      username: a.username,
    });
    // Another terminal's POS credential and the account credential do not sign in here.
    for (const [username, password] of [
      [b.username, b.password],
      [relay.account.username, relay.account.password],
    ] as const) {
      expect(await agentA.authenticator.check(basic(username, password), '10.0.0.7')).toEqual({
        ok: false,
        status: 401,
      });
    }

    // Rotated: the new secret signs in, the old one no longer.
    const rotated = await account('/credential/rotate', { username: a.username });
    expect(rotated.status).toBe(200);
    const afterRotation = await agentA.next((m) => m.revision > on.revision);
    expect(afterRotation.credentials).toHaveLength(1);
    const newPassword = rotated.body.credential.password as string;
    expect((await agentA.authenticator.check(basic(a.username, newPassword), '10.0.0.7')).ok).toBe(
      true,
    );
    expect((await agentA.authenticator.check(basic(a.username, a.password), '10.0.0.7')).ok).toBe(
      false,
    );

    // Revoked: nothing signs in, and the older sets delivered again bring nothing back.
    const revoked = await account('/credential/revoke', { username: a.username });
    expect(revoked.status).toBe(200);
    const afterRevocation = await agentA.next((m) => m.revision > afterRotation.revision);
    expect(afterRevocation.credentials).toEqual([]);
    expect(agentA.store.received(on)).toBe('older');
    expect(agentA.store.received(afterRotation)).toBe('older');
    expect((await agentA.authenticator.check(basic(a.username, newPassword), '10.0.0.7')).ok).toBe(
      false,
    );

    // The agent started again keeps the revocation.
    const restarted = LocalCredentials.open(agentA.dataDir, pino({ level: 'silent' }));
    expect(restarted.revision).toBe(afterRevocation.revision);
    expect(restarted.received(afterRotation)).toBe('older');
    expect(restarted.verifier(a.username)).toBeUndefined();

    // Terminal B, local mode off, held nothing all along; it cannot read A's topic.
    expect(agentB.heard.every((m) => m.credentials.length === 0)).toBe(true);
    await expect(
      agentB.client.subscribeAsync(terminalTopics(a.terminal_id).localCredentials, { qos: 1 }),
    ).rejects.toThrow(/Subscribe error/);
    await agentA.client.endAsync();
    await agentB.client.endAsync();
  });

  it('reach an agent that connects later (retained)', async () => {
    const c = await register();
    await account('/fleet/config/set', {
      scope: { terminal_id: c.terminal_id },
      config: { local_api: { enabled: true, listen: { port: 9443 } } },
    });
    const agentC = await agentOf(c);
    const heard = await agentC.next((m) => m.credentials.length > 0);
    expect(heard.credentials.map((x) => x.username)).toEqual([c.username]);
    await agentC.client.endAsync();
  });

  it('are set with tps fleet config set, and bad values refused with the field named', async () => {
    const t = await register();
    const env = {
      TPS_BASE_URL: relay.baseUrl,
      TPS_ACCOUNT_USERNAME: TEST_ACCOUNT.username,
      TPS_ACCOUNT_PASSWORD: TEST_ACCOUNT.password,
    };
    const set = ['fleet', 'config', 'set', '--terminal', t.terminal_id];
    const [good, badPort, plainAlone] = await runEach([
      {
        args: [
          ...set,
          ...['--local-api', 'on', '--local-api-listen', '[::]:9443'],
          ...['--local-api-max-amount', '20000', '--local-api-max-pending-age-s', '3600'],
          '--json',
        ],
        env,
      },
      { args: [...set, '--local-api-listen', '0.0.0.0:80'], env },
      { args: [...set, '--replace', '--local-api-plain-http', 'on'], env },
    ]);
    expect(good!.code, good!.stderr).toBe(0);
    expect(JSON.parse(good!.stdout).layer).toEqual({
      local_api: {
        enabled: true,
        listen: { host: '::', port: 9443 },
        while_unreachable: { max_amount: 20_000, max_pending_age_seconds: 3600 },
      },
    });
    // Usage errors (exit 2), refused before anything is changed.
    expect(badPort!.code).toBe(2);
    expect(badPort!.stderr).toMatch(/local_api\.listen\.port: must be 1024-65535/);
    expect(plainAlone!.code).toBe(2);
    expect(plainAlone!.stderr).toMatch(/plain_http needs enabled: true/);
    // A rule across settings is judged on the level they join: with local mode on in the
    // level already, plain HTTP alone is accepted.
    const joined = await runEach([
      { args: [...set, '--local-api-plain-http', 'on', '--json'], env },
    ]);
    expect(joined[0]!.code, joined[0]!.stderr).toBe(0);
    expect(JSON.parse(joined[0]!.stdout).layer.local_api).toMatchObject({
      enabled: true,
      plain_http: true,
    });
  });
});
