/**
 * A full card number never reaches the store, the API or the log. An agent whose report
 * shows more of `card_number_*` than the first 6 and last 4 digits (a reader or agent
 * that failed to mask) still has its result applied and acknowledged, so its outbox goes
 * on and the POS learns whether the customer was charged; the relay drops the card
 * number fields and the receipts printed with them, and logs a security event without
 * the number. Real relay, real broker, a test-side agent speaking protocol/mqtt.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import mqtt, { type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../cloud/logging.js';
import { agentClientId, terminalTopics, type CommandMessage } from '../protocol/index.js';
import { eventually } from './support/e2e-parts.js';
import { TEST_ACCOUNT, post, startTestRelay, type TestRelay } from './support/relay.js';

const PAN = '4761739001010119';
const MASKED = '476173******0119';

let relay: TestRelay;
const logLines: string[] = [];
const clients: MqttClient[] = [];
beforeAll(async () => {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logLines.push(...chunk.toString().split('\n').filter(Boolean));
      callback();
    },
  });
  relay = await startTestRelay({}, undefined, { logger: pino(loggerOptions('info'), stream) });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
  await relay.close();
});

/** A registered agent terminal whose test-side agent answers every start with `details`. */
async function terminalReporting(details: Record<string, unknown>) {
  const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, TEST_ACCOUNT);
  expect(created.status).toBe(200);
  const terminal = created.body as {
    terminal_id: string;
    username: string;
    password: string;
    agent: { username: string; password: string };
  };
  const topics = terminalTopics(terminal.terminal_id);
  const agent = await mqtt.connectAsync(relay.brokerUrl, {
    username: terminal.agent.username,
    password: terminal.agent.password,
    clientId: agentClientId(terminal.terminal_id),
    protocolVersion: 4,
    reconnectPeriod: 0,
  });
  clients.push(agent);
  const acks: number[] = [];
  let seq = 0;
  agent.on('message', (topic, payload) => {
    const message = JSON.parse(payload.toString()) as CommandMessage & { seq?: number };
    if (topic === topics.reportAck) acks.push(message.seq!);
    if (topic !== topics.command || message.command.type !== 'transaction.start') return;
    const start = message.command;
    void (async () => {
      await agent.publishAsync(
        topics.commandAck,
        JSON.stringify({ command_id: start.command_id, outcome: 'ACCEPTED' }),
        { qos: 1 },
      );
      seq++;
      await agent.publishAsync(
        topics.report,
        JSON.stringify({
          journal: '0123456789abcdef',
          seq,
          report: {
            type: 'transaction',
            transaction_id: start.transaction_id,
            phase: 'COMPLETED',
            result_code: 'SUCCESS',
            details: { authorized_amount: start.requested_amount, ...details },
          },
        }),
        { qos: 1 },
      );
    })();
  });
  await agent.subscribeAsync([topics.command, topics.reportAck], { qos: 1 });
  const pay = async (externalId: string) => {
    const body = { terminal_id: terminal.terminal_id, external_id: externalId };
    const created = await post(
      relay.baseUrl,
      'v1',
      '/transaction/purchase',
      { ...body, requested_amount: 1234, currency: 'EUR', wait_seconds: 10 },
      terminal,
    );
    expect(created.status).toBe(200);
    expect(created.body.transaction.state).toBe('AWAITING_CONFIRM');
    return created.body.transaction as Record<string, unknown> & {
      payment_method_details?: Record<string, unknown>;
    };
  };
  return { terminal, acks, pay };
}

const card = (number: string) => ({
  payment_method: 'CARD',
  card_scheme: 'VISA',
  card_number_customer: number,
  card_number_merchant: number,
});

describe('card numbers reported by an agent', () => {
  it('applies a result that shows a full card number without it, acknowledges it, and logs a security event', async () => {
    const { terminal, acks, pay } = await terminalReporting({
      payment_method_details: card(PAN),
      receipt_details_customer: `VISA\n${PAN}\nEUR 12.34\n`,
      receipt_details_merchant: `VISA\n${PAN}\nEUR 12.34\n`,
    });
    const transaction = await pay('pan-1');
    // The result stands: the customer was charged, and the POS must know.
    expect(transaction.result_code).toBe('SUCCESS');
    expect(transaction.payment_method_details).toEqual({
      payment_method: 'CARD',
      card_scheme: 'VISA',
    });
    expect(transaction).not.toHaveProperty('receipt_details_customer');
    expect(JSON.stringify(transaction)).not.toContain(PAN);
    // Acknowledged: the agent's outbox goes on.
    await eventually(
      () => acks,
      (a) => a.includes(1),
      { what: 'the report-ack' },
    );

    const got = await post(
      relay.baseUrl,
      'v1',
      '/transaction/get',
      { terminal_id: terminal.terminal_id, external_id: 'pan-1' },
      terminal,
    );
    expect(JSON.stringify(got.body)).not.toContain(PAN);
    const events = await post(
      relay.baseUrl,
      'v1',
      '/event/list',
      { filter: { subject: { eq: terminal.terminal_id } } },
      terminal,
    );
    expect(events.status).toBe(200);
    expect(JSON.stringify(events.body)).not.toContain(PAN);

    // Not in the store's files either.
    for (const file of ['relay.sqlite', 'relay.sqlite-wal']) {
      const full = path.join(relay.dataDir, file);
      if (fs.existsSync(full)) expect(fs.readFileSync(full).includes(PAN), file).toBe(false);
    }
    // The security event names the terminal and the fields, never the number.
    expect(logLines.some((line) => line.includes(PAN))).toBe(false);
    const event = logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.security_event === 'unmasked_card_number');
    expect(event).toMatchObject({
      terminalId: terminal.terminal_id,
      fields: [
        'payment_method_details.card_number_customer',
        'payment_method_details.card_number_merchant',
      ],
    });
    const metrics = await (await fetch(relay.baseUrl.replace(/\/pos$/, '/metrics'))).text();
    expect(metrics).toContain('tps_security_events_total{event="unmasked_card_number"} 1');
  });

  it.each([
    ['19 digits', '4761739001010119123'],
    ['7 leading digits', '4761739*****0119'],
    ['5 trailing digits', '476173*****10119'],
    ['a digit in the middle', '476173***0**0119'],
  ])('drops a card number showing %s', async (_label, number) => {
    const { pay } = await terminalReporting({ payment_method_details: card(number) });
    const transaction = await pay(`pan-${number}`);
    expect(transaction.result_code).toBe('SUCCESS');
    expect(transaction.payment_method_details).not.toHaveProperty('card_number_merchant');
  });

  it('keeps and serves a card number masked to the first 6 and last 4 digits', async () => {
    const { pay } = await terminalReporting({
      payment_method_details: { ...card(MASKED), card_number_customer: '************0119' },
      receipt_details_customer: `VISA\n************0119\n`,
    });
    const transaction = await pay('masked-1');
    expect(transaction.payment_method_details).toMatchObject({
      card_number_customer: '************0119',
      card_number_merchant: MASKED,
    });
    expect(transaction.receipt_details_customer).toBe('VISA\n************0119\n');
  });
});
