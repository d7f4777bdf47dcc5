/**
 * An agent's fleet messages, bent: facts, configuration reports, update statuses and
 * diagnostic answers of valid shape with fields replaced by wrong types, huge and deep
 * values, control characters, removed or added, and payloads that are not JSON, published
 * with a real agent credential to the embedded broker. A diagnostic answer is bent while a
 * request waits for it over HTTP. The relay never logs an error or a secret, never answers
 * a 500, never waits past the plain answer that follows a dropped one, and applies a
 * valid message after them all.
 */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import mqtt, { type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../cloud/logging.js';
import {
  DiagnosticRequestMessage,
  agentClientId,
  terminalTopics,
  type DiagnosticReplyMessage,
} from '../protocol/index.js';
import { eventually } from './support/e2e-parts.js';
import { bentBody, fuzzParameters } from './support/fuzz.js';
import { TEST_ACCOUNT, post, startTestRelay, type TestRelay } from './support/relay.js';

/** Every line the relay logs at warn and above. */
const lines: string[] = [];
const logger = pino(
  loggerOptions('warn'),
  new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      callback();
    },
  }),
);
const errors = () =>
  lines.filter((line) => {
    const level = (JSON.parse(line) as { level?: unknown }).level;
    return typeof level === 'number' ? level >= 50 : level === 'error' || level === 'fatal';
  });

let relay: TestRelay;
let agent: MqttClient;
let terminalId: string;
let agentPassword: string;
/** Diagnostic requests the agent heard, for the answers to bend. */
const requests: DiagnosticRequestMessage[] = [];

beforeAll(async () => {
  relay = await startTestRelay({ mqttMessagesPerMinute: 1_000_000 }, undefined, { logger });
  const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, TEST_ACCOUNT);
  const terminal = created.body as {
    terminal_id: string;
    agent: { username: string; password: string };
  };
  terminalId = terminal.terminal_id;
  agentPassword = terminal.agent.password;
  const topics = terminalTopics(terminalId);
  agent = await mqtt.connectAsync(relay.brokerUrl, {
    username: terminal.agent.username,
    password: terminal.agent.password,
    clientId: agentClientId(terminalId),
    protocolVersion: 4,
    reconnectPeriod: 0,
  });
  agent.on('message', (topic, payload) => {
    if (topic === topics.diagnostic) {
      requests.push(DiagnosticRequestMessage.parse(JSON.parse(payload.toString())));
    }
  });
  await agent.subscribeAsync(topics.diagnostic, { qos: 1 });
  await agent.publishAsync(topics.presence, '{"connected":true}', { qos: 1, retain: true });
  await eventually(
    () => post(relay.baseUrl, 'v1', '/terminal/status', { terminal_id: terminalId }, TEST_ACCOUNT),
    (status) => status.body.status?.connected === true,
    { what: 'the terminal online' },
  );
});
afterAll(async () => {
  await agent?.endAsync(true);
  await relay?.close();
});

const at = () => new Date().toISOString();
const HOSTILE_TEXT = '\x1b]52;c;ZXZpbA==\x07\r\x1b[1A in sync \x9b2J\u202e';

const validMessages = (requestId: string) => ({
  facts: {
    agent_version: '1.4.0',
    reader: { protocol: 'zvt', model: 'Reader 5', firmware: '2.1' },
    at: at(),
  },
  'config-report': {
    version: 'ab'.repeat(8),
    status: 'REJECTED',
    reason: 'no such profile',
    applied_version: 'cd'.repeat(8),
    at: at(),
  },
  'update-status': {
    running_version: '1.4.0',
    phase: 'idle',
    last: { order_id: 'o-1', version: '1.4.0', result: 'rolled_back', reason: 'x', at: at() },
    at: at(),
  },
  doctor: {
    request_id: requestId,
    kind: 'doctor',
    doctor: { checks: [{ status: 'fail', title: 'reader', detail: 'no answer\nin 3 s' }] },
  },
  logs: {
    request_id: requestId,
    kind: 'logs',
    logs: { lines: ['{"msg":"a line"}'], truncated: false },
  },
  trace: {
    request_id: requestId,
    kind: 'trace',
    trace: {
      transaction_id: 'tx-1',
      frames: [{ at: at(), direction: 'reader→host', text: 'frame' }],
      truncated: true,
    },
  },
});
type Kind = keyof ReturnType<typeof validMessages>;
const KINDS: Kind[] = ['facts', 'config-report', 'update-status', 'doctor', 'logs', 'trace'];
const isDiagnostic = (kind: Kind): kind is 'doctor' | 'logs' | 'trace' =>
  kind === 'doctor' || kind === 'logs' || kind === 'trace';

/** A valid message bent, text laced with control characters, or a payload that is not JSON. */
const payload = (valid: Record<string, unknown>) =>
  fc
    .oneof(
      { weight: 6, arbitrary: bentBody(valid).map((b) => JSON.stringify(b) ?? 'null') },
      {
        weight: 2,
        arbitrary: fc
          .constantFrom(...JSON.stringify(valid).match(/"[^"]*"(?=[,}\]])/g)!)
          .map((value) =>
            JSON.stringify(valid).replace(value, JSON.stringify(value.slice(1, -1) + HOSTILE_TEXT)),
          ),
      },
      { weight: 1, arbitrary: fc.string({ maxLength: 200, unit: 'binary' }) },
    )
    .filter((text) => Buffer.byteLength(text) < 60_000);

describe('fleet messages from an agent, bent', () => {
  it('never make the relay fail, and valid messages after them still apply', async () => {
    const topics = terminalTopics(terminalId);
    const topicOf = (kind: Kind) =>
      kind === 'facts'
        ? topics.facts
        : kind === 'config-report'
          ? topics.configReport
          : kind === 'update-status'
            ? topics.updateStatus
            : topics.diagnosticReply;
    const bent = fc
      .constantFrom(...KINDS)
      .chain((kind) =>
        fc
          .tuple(fc.constant(kind), payload(validMessages('{request}')[kind]))
          .map(([k, text]) => ({ kind: k, text })),
      );
    await fc.assert(
      fc.asyncProperty(bent, async ({ kind, text }) => {
        expect(agent.connected, 'the agent was disconnected').toBe(true);
        if (!isDiagnostic(kind)) {
          await agent.publishAsync(topicOf(kind), text, { qos: 1, retain: true });
          // What was kept of it is read back without a fault.
          for (const [op, body] of [
            ['/fleet/facts', { terminal_id: terminalId }],
            ['/fleet/config/get', { scope: { terminal_id: terminalId } }],
          ] as const) {
            const read = await post(relay.baseUrl, 'v1', op, body, TEST_ACCOUNT);
            expect(read.status, `${op}: ${JSON.stringify(read.body)}`).toBe(200);
          }
          return;
        }
        // A request waits over HTTP; the bent answer comes first, then a plain one.
        const heard = requests.length;
        const asked = post(
          relay.baseUrl,
          'v1',
          '/fleet/diagnostics',
          { terminal_id: terminalId, kind, wait_seconds: 30 },
          TEST_ACCOUNT,
        );
        const { request_id } = (
          await eventually(
            () => requests,
            (seen) => seen.length > heard,
            { what: 'the diagnostic request heard' },
          )
        ).at(-1)!;
        await agent.publishAsync(topics.diagnosticReply, text.replaceAll('{request}', request_id), {
          qos: 1,
        });
        const plain: DiagnosticReplyMessage = { request_id, kind, error: 'plain' };
        await agent.publishAsync(topics.diagnosticReply, JSON.stringify(plain), { qos: 1 });
        const answer = await asked;
        expect([200, 502], JSON.stringify(answer.body)).toContain(answer.status);
      }),
      fuzzParameters(120),
    );

    // A valid fact applies after them all; the fleet's reads answer.
    await agent.publishAsync(
      topics.facts,
      JSON.stringify({ ...validMessages('').facts, agent_version: '9.9.9' }),
      { qos: 1, retain: true },
    );
    await eventually(
      () => post(relay.baseUrl, 'v1', '/fleet/facts', { terminal_id: terminalId }, TEST_ACCOUNT),
      (facts) => facts.body.terminals?.[0]?.agent_version === '9.9.9',
      { what: 'the last facts applied' },
    );
    const config = await post(
      relay.baseUrl,
      'v1',
      '/fleet/config/get',
      { scope: { terminal_id: terminalId } },
      TEST_ACCOUNT,
    );
    expect(config.status).toBe(200);
    expect(errors()).toEqual([]);
    for (const line of lines) {
      expect(line).not.toContain(agentPassword);
      expect(line).not.toContain(TEST_ACCOUNT.password);
      expect(line).not.toContain('ZXZpbA==');
    }
  }, 120_000);
});
