/**
 * Revoking and rotating credentials over the real API and the embedded broker: a revoked
 * POS credential is refused at once (its check was remembered), a revoked agent's live
 * session ends and it cannot sign in again, a rotation's old secret stops working, an
 * account username replaced by TPS_ACCOUNT_USERNAME stops working, and with two relays on
 * one PostgreSQL the other relay refuses a revoked credential at once too.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminalTopics } from '../protocol/index.js';
import { eventually } from './support/e2e-parts.js';
import {
  TEST_ACCOUNT,
  post,
  startTestRelay,
  tempDataDir,
  type TestRelay,
} from './support/relay.js';
import { twoRelaysOnOneDatabase } from './support/scratch-database.js';

interface Registered {
  terminal_id: string;
  username: string;
  password: string;
  agent: { broker_url: string; username: string; password: string };
}

type Credential = { username: string; password: string };

const clients: MqttClient[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
});

async function register(relay: TestRelay): Promise<Registered> {
  const res = await post(relay.baseUrl, 'v1', '/terminal/create', {}, TEST_ACCOUNT);
  expect(res.status).toBe(200);
  return res.body;
}

const status = (relay: TestRelay, terminalId: string, credential: Credential) =>
  post(relay.baseUrl, 'v1', '/terminal/status', { terminal_id: terminalId }, credential);

const credentialOp = (
  relay: TestRelay,
  action: 'revoke' | 'rotate',
  body: object,
  credential: Credential = TEST_ACCOUNT,
) => post(relay.baseUrl, 'v1', `/credential/${action}`, body, credential);

/** Signs in as the terminal's agent does; answers the client, or the broker's refusal. */
function connectAgent(
  brokerUrl: string,
  terminalId: string,
  password: string,
): Promise<{ client: MqttClient; error?: Error & { code?: number } }> {
  const client = mqtt.connect(brokerUrl, {
    username: terminalId,
    password,
    clientId: `agent-${terminalId}`,
    protocolVersion: 4,
    reconnectPeriod: 0,
    connectTimeout: 5000,
  });
  clients.push(client);
  return new Promise((resolve) => {
    client.once('connect', () => resolve({ client }));
    client.once('error', (error) => resolve({ client, error }));
  });
}

const closed = (client: MqttClient) =>
  new Promise<void>((resolve) => (client.connected ? client.once('close', resolve) : resolve()));

describe('revoking and rotating credentials on one relay', () => {
  let relay: TestRelay;
  beforeAll(async () => {
    relay = await startTestRelay();
  });
  afterAll(async () => {
    await relay.close();
  });

  it('refuses a revoked POS credential at once, though its check was remembered', async () => {
    const sim = await relay.newSimulator();
    const pos = { username: sim.username, password: sim.password };
    expect((await status(relay, sim.terminal_id, pos)).status).toBe(200);

    const revoked = await credentialOp(relay, 'revoke', { username: sim.username });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({
      credential: {
        type: 'API',
        username: sim.username,
        terminal_id: sim.terminal_id,
        revoked: true,
      },
    });
    const refused = await status(relay, sim.terminal_id, pos);
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('UNAUTHORIZED');
    // The terminal stays the account's.
    expect((await status(relay, sim.terminal_id, TEST_ACCOUNT)).status).toBe(200);
    // Revoked once is gone: a second revoke finds nothing.
    const again = await credentialOp(relay, 'revoke', { username: sim.username });
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('CREDENTIAL_NOT_FOUND');
  });

  it('rotates a POS credential: the new secret works, the old one stops at once', async () => {
    const sim = await relay.newSimulator();
    const old = { username: sim.username, password: sim.password };
    expect((await status(relay, sim.terminal_id, old)).status).toBe(200);
    const rotated = await credentialOp(relay, 'rotate', { username: sim.username });
    expect(rotated.status).toBe(200);
    const { password } = rotated.body.credential;
    expect(password).toEqual(expect.any(String));
    expect(password).not.toBe(sim.password);
    expect((await status(relay, sim.terminal_id, old)).status).toBe(401);
    expect((await status(relay, sim.terminal_id, { ...old, password })).status).toBe(200);
  });

  it('lets only the account revoke, and only its own credentials', async () => {
    const a = await relay.newSimulator();
    const b = await relay.newSimulator();
    const byTerminal = await credentialOp(
      relay,
      'revoke',
      { username: b.username },
      { username: a.username, password: a.password },
    );
    expect(byTerminal.status).toBe(403);
    expect(byTerminal.body.error.code).toBe('FORBIDDEN');
    const unknown = await credentialOp(relay, 'revoke', { username: 'nobody-here' });
    expect(unknown.status).toBe(404);
    const self = await credentialOp(relay, 'revoke', { username: TEST_ACCOUNT.username });
    expect(self.status).toBe(400);
    expect(self.body.error.description).toMatch(/cannot revoke itself/);
    expect((await status(relay, b.terminal_id, b)).status).toBe(200);
    // A simulated terminal's agent credential is the relay's own.
    const simAgent = await credentialOp(relay, 'revoke', {
      type: 'AGENT',
      username: b.terminal_id,
    });
    expect(simAgent.status).toBe(404);
  });

  it("ends a revoked agent's live session and refuses its sign-in from then on", async () => {
    const terminal = await register(relay);
    const { broker_url, password } = terminal.agent;
    const agent = await connectAgent(broker_url, terminal.terminal_id, password);
    expect(agent.error).toBeUndefined();
    const sessionEnded = closed(agent.client);

    const revoked = await credentialOp(relay, 'revoke', {
      type: 'AGENT',
      username: terminal.terminal_id,
    });
    expect(revoked.status).toBe(200);
    await sessionEnded;
    const again = await connectAgent(broker_url, terminal.terminal_id, password);
    expect(again.error?.code).toBe(4);
    // The terminal's POS credential is another credential: it still works.
    expect((await status(relay, terminal.terminal_id, terminal)).status).toBe(200);
  });

  it("rotates an agent's credential: the old session ends, the old secret is refused, the new one signs in", async () => {
    const terminal = await register(relay);
    const { broker_url, password } = terminal.agent;
    const agent = await connectAgent(broker_url, terminal.terminal_id, password);
    expect(agent.error).toBeUndefined();
    const sessionEnded = closed(agent.client);

    const rotated = await credentialOp(relay, 'rotate', {
      type: 'AGENT',
      username: terminal.terminal_id,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.credential).toMatchObject({
      type: 'AGENT',
      username: terminal.terminal_id,
    });
    await sessionEnded;
    expect((await connectAgent(broker_url, terminal.terminal_id, password)).error?.code).toBe(4);
    const fresh = await connectAgent(
      broker_url,
      terminal.terminal_id,
      rotated.body.credential.password,
    );
    expect(fresh.error).toBeUndefined();
    await fresh.client.subscribeAsync(terminalTopics(terminal.terminal_id).command, { qos: 1 });
  });
});

describe('an account username replaced by TPS_ACCOUNT_USERNAME', () => {
  it('no longer signs in, whether generated at first start or configured before', async () => {
    const dataDir = tempDataDir();
    const first = await startTestRelay(
      { accountUsername: undefined, accountPassword: undefined },
      dataDir,
    );
    const generated = first.bootstrap.accountCredential!;
    expect(generated).toBeDefined();
    const sim = await post(first.baseUrl, 'v1', '/simulator/create', {}, generated);
    expect(sim.status).toBe(200);
    await first.close();

    const second = await startTestRelay({}, dataDir);
    const check = (relay: TestRelay, credential: Credential) =>
      status(relay, sim.body.terminal_id, credential).then((r) => r.status);
    expect(await check(second, generated)).toBe(401);
    expect(await check(second, TEST_ACCOUNT)).toBe(200);
    await second.close();

    const renamed = { username: 'renamed-account', password: 'renamed-account-password' };
    const third = await startTestRelay(
      { accountUsername: renamed.username, accountPassword: renamed.password },
      dataDir,
    );
    expect(await check(third, TEST_ACCOUNT)).toBe(401);
    expect(await check(third, renamed)).toBe(200);
    await third.close();
  });
});

const DATABASE_URL = process.env.DATABASE_URL;

describe.skipIf(!DATABASE_URL)('two relays on one PostgreSQL (DATABASE_URL)', () => {
  const relays = twoRelaysOnOneDatabase(DATABASE_URL!, 'tps_revoke');

  it('the other relay refuses a POS credential revoked on one, at once', async () => {
    const { a, b } = relays;
    const sim = await a.newSimulator();
    const pos = { username: sim.username, password: sim.password };
    // Both relays have checked it, and remember it.
    expect((await status(a, sim.terminal_id, pos)).status).toBe(200);
    expect((await status(b, sim.terminal_id, pos)).status).toBe(200);
    expect((await credentialOp(a, 'revoke', { username: sim.username })).status).toBe(200);
    expect((await status(a, sim.terminal_id, pos)).status).toBe(401);
    // The notice travels through PostgreSQL: B hears it within moments, far inside the
    // 10 s a remembered credential is otherwise kept.
    await eventually(
      () => status(b, sim.terminal_id, pos).then((r) => r.status),
      (code) => code === 401,
      { ms: 3_000, every: 20, what: 'relay B refusing the revoked credential' },
    );
  });

  it("ends the revoked agent's session on the other relay's broker", async () => {
    const { a, b } = relays;
    const terminal = await register(a);
    const agent = await connectAgent(b.brokerUrl, terminal.terminal_id, terminal.agent.password);
    expect(agent.error).toBeUndefined();
    const sessionEnded = closed(agent.client);
    const revoked = await credentialOp(a, 'revoke', {
      type: 'AGENT',
      username: terminal.terminal_id,
    });
    expect(revoked.status).toBe(200);
    await sessionEnded;
    const again = await connectAgent(b.brokerUrl, terminal.terminal_id, terminal.agent.password);
    expect(again.error?.code).toBe(4);
  });
});

if (!DATABASE_URL) {
  describe('two relays on one PostgreSQL', () => {
    it.skip('SKIPPED, DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test): a credential revoked on one relay is refused by the other at once, and its agent session there ends', () => {});
  });
}
