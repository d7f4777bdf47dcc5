/**
 * An agent's MQTT messages, bent: reports, presence and command acknowledgements of valid
 * shape with fields replaced by wrong types, huge and deep values, removed or added, and
 * payloads that are not JSON, published with a real agent credential to the embedded
 * broker. The relay never logs an error, never rejects unhandled, and keeps answering and
 * applying reports after them. And card numbers, plain or in groups, anywhere in the free
 * text of a report (receipt, result description, screen message): masked before the relay
 * keeps or serves them.
 */
import fc from 'fast-check';
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentClientId, terminalTopics, type CommandMessage } from '../protocol/index.js';
import { eventually } from './support/e2e-parts.js';
import fs from 'node:fs';
import path from 'node:path';
import {
  bentBody,
  cardNumber,
  errorRecordingLogger,
  fuzzParameters,
  written,
} from './support/fuzz.js';
import { TEST_ACCOUNT, post, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
let agent: MqttClient;
let terminalId: string;
let transactionId: string;
let commandId: string;
const acks: number[] = [];
const { logger, errors } = errorRecordingLogger();

beforeAll(async () => {
  relay = await startTestRelay({ mqttMessagesPerMinute: 1_000_000 }, undefined, { logger });
  const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, TEST_ACCOUNT);
  const terminal = created.body as {
    terminal_id: string;
    agent: { username: string; password: string };
  };
  terminalId = terminal.terminal_id;
  const topics = terminalTopics(terminalId);
  agent = await mqtt.connectAsync(relay.brokerUrl, {
    username: terminal.agent.username,
    password: terminal.agent.password,
    clientId: agentClientId(terminalId),
    protocolVersion: 4,
    reconnectPeriod: 0,
  });
  const started = new Promise<void>((resolve) => {
    agent.on('message', (topic, payload) => {
      const message = JSON.parse(payload.toString()) as CommandMessage & { seq?: number };
      if (topic === topics.reportAck) acks.push(message.seq!);
      if (topic === topics.command && message.command.type === 'transaction.start') {
        transactionId = message.command.transaction_id;
        commandId = message.command.command_id;
        resolve();
      }
    });
  });
  await agent.subscribeAsync([topics.command, topics.reportAck], { qos: 1 });
  await agent.publishAsync(topics.presence, JSON.stringify({ connected: true }), { qos: 1 });
  const purchase = await post(
    relay.baseUrl,
    'v1',
    '/transaction/purchase',
    {
      terminal_id: terminalId,
      external_id: 'fuzz-1',
      requested_amount: 1250,
      currency: 'EUR',
      wait_seconds: 0,
    },
    TEST_ACCOUNT,
  );
  expect(purchase.status).toBe(200);
  await started;
});
afterAll(async () => {
  await agent?.endAsync(true);
  await relay?.close();
});

let seq = 0;
const JOURNAL = 'f0'.repeat(8);

const validMessages = () => ({
  report: {
    journal: JOURNAL,
    seq: ++seq,
    report: {
      type: 'transaction',
      transaction_id: transactionId,
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      details: {
        authorized_amount: 1250,
        payment_method_details: {
          payment_method: 'CARD',
          card_scheme: 'VISA',
          card_number_customer: '476173******0119',
        },
        receipt_details_customer: 'VISA\nEUR 12.50\n',
        reference: 'ref-1',
      },
    },
  },
  status: {
    journal: JOURNAL,
    seq: ++seq,
    report: {
      type: 'status',
      at: new Date().toISOString(),
      readings: { connected: true, battery_percentage: 50, transaction_state: 'READY' },
    },
  },
  presence: { connected: true, at: new Date().toISOString(), agent_version: '1.0.0' },
  ack: { command_id: commandId, outcome: 'ACCEPTED' },
});

const KINDS = ['report', 'status', 'presence', 'ack'] as const;

describe('agent messages, bent', () => {
  it('never make the relay fail, and reports after them still apply', async () => {
    const topics = terminalTopics(terminalId);
    const topicOf = {
      report: topics.report,
      status: topics.report,
      presence: topics.presence,
      ack: topics.commandAck,
    };
    const message = fc.constantFrom(...KINDS).chain((kind) =>
      fc
        .oneof(
          { weight: 8, arbitrary: bentBody(validMessages()[kind]).map((b) => JSON.stringify(b)) },
          { weight: 1, arbitrary: fc.string({ maxLength: 200, unit: 'binary' }) },
          {
            weight: 1,
            arbitrary: fc
              .uint8Array({ maxLength: 200 })
              .map((b) => Buffer.from(b).toString('latin1')),
          },
        )
        // A larger packet ends the connection at the broker (test/mqtt-limits.test.ts).
        .filter((payload) => Buffer.byteLength(payload ?? '') < 60_000)
        .map((payload) => ({ kind, payload: payload ?? 'null' })),
    );
    await fc.assert(
      fc.asyncProperty(message, async ({ kind, payload }) => {
        expect(agent.connected, 'the agent was disconnected').toBe(true);
        await agent.publishAsync(topicOf[kind], payload, { qos: 1 });
      }),
      fuzzParameters(150),
    );

    // A report of a new journal is applied and acknowledged after all of them.
    const last = validMessages().status;
    await agent.publishAsync(
      topics.report,
      JSON.stringify({ ...last, journal: 'a1'.repeat(8), seq: 1 }),
      { qos: 1 },
    );
    await eventually(
      () => acks,
      (seen) => seen.includes(1),
      { what: 'the last report acknowledged' },
    );
    const status = await post(
      relay.baseUrl,
      'v1',
      '/terminal/status',
      { terminal_id: terminalId },
      TEST_ACCOUNT,
    );
    expect(status.status).toBe(200);
    expect(errors).toEqual([]);
  });
});

/** Printable ASCII, as receipts and descriptions take it. */
const printable = (max: number) =>
  fc
    .array(fc.integer({ min: 0x20, max: 0x7e }), { maxLength: max })
    .map((codes) => String.fromCharCode(...codes));
/** Next to a number, neither a digit nor `*` (which would make it another number). */
const boundary = fc.constantFrom(...' :/|=ABCxyz#(,');
/** A card number, plain or grouped, in text of up to 2 × `max` characters around it. */
const embedded = (max: number) =>
  fc
    .tuple(printable(max), boundary, cardNumber.chain(written), boundary, printable(max))
    .map(([before, open, number, close, after]) => ({
      text: `${before}${open}${number}${close}${after}`,
      number,
    }));

describe('card numbers in the free text of reports', () => {
  it('are masked before the relay keeps or serves them, wherever they sit', async () => {
    const topics = terminalTopics(terminalId);
    const starts = new Map<string, string>();
    agent.on('message', (topic, payload) => {
      if (topic !== topics.command) return;
      const { command } = JSON.parse(payload.toString()) as CommandMessage;
      if (command.type === 'transaction.start') {
        starts.set(command.external_id, command.transaction_id);
      }
    });
    const journal = 'b2'.repeat(8);
    let reportSeq = 0;
    const publishReport = (report: object) =>
      agent.publishAsync(topics.report, JSON.stringify({ journal, seq: ++reportSeq, report }), {
        qos: 1,
      });
    const account = (operation: string, body: object) =>
      post(relay.baseUrl, 'v1', operation, body, TEST_ACCOUNT);
    const numbers: string[] = [];
    let run = 0;
    await fc.assert(
      fc.asyncProperty(embedded(3), embedded(100), embedded(100), async (receipt, said, screen) => {
        numbers.push(receipt.number, said.number, screen.number);
        const external_id = `pan-fuzz-${++run}`;
        const ids = { terminal_id: terminalId, external_id };
        const purchase = await account('/transaction/purchase', {
          ...ids,
          requested_amount: 500,
          currency: 'EUR',
          wait_seconds: 0,
        });
        expect(purchase.status).toBe(200);
        await eventually(
          () => starts.get(external_id),
          (id) => id !== undefined,
          { what: 'the start' },
        );
        await publishReport({
          type: 'transaction',
          transaction_id: starts.get(external_id),
          phase: 'COMPLETED',
          result_code: 'SUCCESS',
          result_description: said.text,
          details: { authorized_amount: 500, receipt_details_customer: `${receipt.text}\n` },
        });
        await publishReport({
          type: 'status',
          at: new Date().toISOString(),
          readings: { screen_message: screen.text },
        });
        const got = await eventually(
          () => account('/transaction/get', ids),
          (r) => r.body.transaction?.state === 'AWAITING_CONFIRM',
          { what: 'the result' },
        );
        const status = await eventually(
          () => account('/terminal/status', { terminal_id: terminalId }),
          (r) => r.body.status?.screen_message?.length === screen.text.length,
          { what: 'the screen message' },
        );
        for (const shown of [JSON.stringify(got.body), JSON.stringify(status.body)]) {
          for (const number of [receipt.number, said.number, screen.number]) {
            expect(shown).not.toContain(number);
          }
        }
        expect(got.body.transaction.receipt_details_customer).toHaveLength(receipt.text.length + 1);
        const confirmed = await account('/transaction/confirm', { ...ids, result_code: 'SUCCESS' });
        expect(confirmed.status).toBe(200);
      }),
      fuzzParameters(15),
    );
    for (const file of ['relay.sqlite', 'relay.sqlite-wal']) {
      const full = path.join(relay.dataDir, file);
      if (!fs.existsSync(full)) continue;
      const bytes = fs.readFileSync(full);
      for (const number of numbers) expect(bytes.includes(number), number).toBe(false);
    }
    expect(errors).toEqual([]);
  });
});
