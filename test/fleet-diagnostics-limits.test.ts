/**
 * Diagnostic requests waiting for terminals are bounded per account, over real HTTP and
 * MQTT: one account that asks a silent terminal again and again fills only its own share
 * (429 beyond it), and another account's request is still sent and answered.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashGeneratedSecret } from '../cloud/accounts/secrets.js';
import {
  DiagnosticRequestMessage,
  agentClientId,
  terminalTopics,
  type DiagnosticReplyMessage,
} from '../protocol/index.js';
import { eventually } from './support/e2e-parts.js';
import { TEST_ACCOUNT, post, startTestRelay, type TestRelay } from './support/relay.js';

const OTHER = { username: 'diag-other-account', password: 'diag-other-password' };
/** The documented default of TPS_DIAGNOSTICS_PER_ACCOUNT. */
const SHARE = 20;

let relay: TestRelay;
const agents: MqttClient[] = [];

beforeAll(async () => {
  relay = await startTestRelay();
  const now = new Date().toISOString();
  await relay.store.createAccount({ id: 'acct-diag-other', kind: 'merchant', createdAt: now });
  await relay.store.putCredential({
    username: OTHER.username,
    secretHash: hashGeneratedSecret(OTHER.password),
    accountId: 'acct-diag-other',
    createdAt: now,
  });
});
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.endAsync(true)));
  await relay.close();
});

/** A terminal of `owner` with a connected agent, and the diagnostic requests it hears. */
async function onlineTerminal(owner: { username: string; password: string }) {
  const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, owner);
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const { terminal_id: terminalId, agent: credential } = created.body as {
    terminal_id: string;
    agent: { username: string; password: string };
  };
  const topics = terminalTopics(terminalId);
  const agent = await mqtt.connectAsync(relay.brokerUrl, {
    username: credential.username,
    password: credential.password,
    clientId: agentClientId(terminalId),
    reconnectPeriod: 0,
  });
  agents.push(agent);
  const heard: DiagnosticRequestMessage[] = [];
  agent.on('message', (topic, payload) => {
    if (topic === topics.diagnostic) {
      heard.push(DiagnosticRequestMessage.parse(JSON.parse(payload.toString())));
    }
  });
  await agent.subscribeAsync(topics.diagnostic, { qos: 1 });
  await agent.publishAsync(topics.presence, '{"connected":true}', { qos: 1, retain: true });
  await eventually(
    () => post(relay.baseUrl, 'v1', '/terminal/status', { terminal_id: terminalId }, owner),
    (status) => status.body.status?.connected === true,
    { what: `${terminalId} online` },
  );
  const answer = (request: DiagnosticRequestMessage) => {
    const reply: DiagnosticReplyMessage = {
      request_id: request.request_id,
      kind: request.kind,
      logs: { lines: [`answered ${request.request_id}`], truncated: false },
    };
    return agent.publishAsync(topics.diagnosticReply, JSON.stringify(reply), { qos: 1 });
  };
  return { terminalId, heard, answer };
}

describe('diagnostic requests waiting for terminals', () => {
  it("are bounded per account: one account's full share leaves another's request through", async () => {
    const busy = await onlineTerminal(TEST_ACCOUNT);
    const other = await onlineTerminal(OTHER);
    const ask = (owner: typeof OTHER, terminalId: string, wait = 30) =>
      post(
        relay.baseUrl,
        'v1',
        '/fleet/diagnostics',
        { terminal_id: terminalId, kind: 'logs', wait_seconds: wait },
        owner,
      );

    // One account asks its silent terminal until it is refused: each accepted request
    // waits (its agent hears it), the refused one is answered at once.
    const waiting: Array<ReturnType<typeof ask>> = [];
    let refused: Awaited<ReturnType<typeof ask>> | undefined;
    while (!refused && waiting.length <= 150) {
      const heardBefore = busy.heard.length;
      let settled: Awaited<ReturnType<typeof ask>> | undefined;
      const request = ask(TEST_ACCOUNT, busy.terminalId);
      void request.then((res) => (settled = res));
      const deadline = Date.now() + 10_000;
      while (!settled && busy.heard.length === heardBefore && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      if (settled) refused = settled;
      else waiting.push(request);
    }
    expect(refused?.status, JSON.stringify(refused?.body)).toBe(429);
    expect(refused?.body.error.code).toBe('TOO_MANY_REQUESTS');
    expect(refused?.headers.get('retry-after')).toBe('5');
    expect(waiting).toHaveLength(SHARE);

    // Another account's request is sent and answered meanwhile.
    const theirs = ask(OTHER, other.terminalId, 10);
    await eventually(
      () => other.heard.length,
      (n) => n === 1,
      { what: "the other account's request sent" },
    );
    await other.answer(other.heard[0]!);
    const answered = await theirs;
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    expect(answered.body.logs.lines).toEqual([`answered ${other.heard[0]!.request_id}`]);

    // Answered, the first account's requests end and free its share.
    await Promise.all(busy.heard.map((request) => busy.answer(request)));
    for (const res of await Promise.all(waiting)) expect(res.status).toBe(200);
    busy.heard.length = 0;
    const again = ask(TEST_ACCOUNT, busy.terminalId, 10);
    await eventually(
      () => busy.heard.length,
      (n) => n === 1,
      { what: 'a request sent again' },
    );
    await busy.answer(busy.heard[0]!);
    expect((await again).status).toBe(200);
  }, 60_000);
});
