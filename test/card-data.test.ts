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
import { pairTransactionId } from '../protocol/transaction-rules/pair-id.js';
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

/**
 * A registered agent terminal whose test-side agent answers every start with `details`
 * (and `report`'s members on the report itself).
 */
async function terminalReporting(
  details: Record<string, unknown>,
  report: Record<string, unknown> = {},
) {
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
  const publishReport = (body: Record<string, unknown>) =>
    agent.publishAsync(
      topics.report,
      JSON.stringify({ journal: '0123456789abcdef', seq: ++seq, report: body }),
      { qos: 1 },
    );
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
      await publishReport({
        type: 'transaction',
        transaction_id: start.transaction_id,
        phase: 'COMPLETED',
        result_code: 'SUCCESS',
        ...report,
        details: { authorized_amount: start.requested_amount, ...details },
      });
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
  return { terminal, acks, pay, agent, topics, publishReport };
}

/** Whether the relay's store files hold `text`. */
function storeHolds(text: string): boolean {
  return ['relay.sqlite', 'relay.sqlite-wal'].some((file) => {
    const full = path.join(relay.dataDir, file);
    return fs.existsSync(full) && fs.readFileSync(full).includes(text);
  });
}

/** The log's security events of `kind`. */
const securityEvents = (event: string) =>
  logLines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.security_event === event);

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

// Card numbers a terminal printed in full, as receipts print them: plain and in groups.
// Not PAN: earlier tests use it in external ids, which the store keeps.
const VISA = '4111111111111111';
const GROUPED = '4012 8888 8888 1881';
const GROUPED_MASKED = '4012 88** **** 1881';
const AMEX = '378282246310005';
const AMEX_GROUPED = '3782-822463-10005';
const MASTERCARD = '5555555555554444';
const MASTERCARD_DOTTED = '5555.5555.5555.4444';
const FULL_FORMS = [VISA, GROUPED, AMEX, AMEX_GROUPED, MASTERCARD, MASTERCARD_DOTTED];

const shows = (value: unknown) => {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return FULL_FORMS.filter((form) => text.includes(form));
};

describe('card numbers in the free text an agent sends', () => {
  it('masks them in receipts and the result description before the relay keeps or serves them', async () => {
    const { terminal, pay } = await terminalReporting(
      {
        payment_method_details: card(MASKED),
        receipt_details_customer: `VISA\nCARD ${VISA}\nEUR 12.34\n`,
        receipt_details_merchant: `PAN ${GROUPED}\nAMEX ${AMEX_GROUPED}\n27.11.2026 TID 12345678\n`,
      },
      { result_description: `Approved ${MASTERCARD_DOTTED} trace 000123` },
    );
    const transaction = await pay('text-1');
    // Masked where they were, the rest of the text as printed.
    expect(transaction).toMatchObject({
      result_code: 'SUCCESS',
      result_description: 'Approved 5555.55**.****.4444 trace 000123',
      receipt_details_customer: 'VISA\nCARD 411111******1111\nEUR 12.34\n',
      receipt_details_merchant: `PAN ${GROUPED_MASKED}\nAMEX 3782-82****-*0005\n27.11.2026 TID 12345678\n`,
    });
    expect(shows(transaction)).toEqual([]);

    const got = await post(
      relay.baseUrl,
      'v1',
      '/transaction/get',
      { terminal_id: terminal.terminal_id, external_id: 'text-1' },
      terminal,
    );
    expect(got.body.transaction.receipt_details_merchant).toContain(GROUPED_MASKED);
    expect(shows(got.body)).toEqual([]);
    const events = await post(
      relay.baseUrl,
      'v1',
      '/event/list',
      { filter: { subject: { eq: terminal.terminal_id } } },
      terminal,
    );
    expect(events.status).toBe(200);
    expect(JSON.stringify(events.body)).toContain(GROUPED_MASKED);
    expect(shows(events.body)).toEqual([]);
    for (const form of FULL_FORMS) expect(storeHolds(form), form).toBe(false);

    // A security event names the terminal and the members, never the digits.
    expect(logLines.flatMap(shows)).toEqual([]);
    expect(securityEvents('card_number_in_text')).toContainEqual(
      expect.objectContaining({
        terminalId: terminal.terminal_id,
        kind: 'report',
        fields: [
          'result_description',
          'details.receipt_details_customer',
          'details.receipt_details_merchant',
        ],
      }),
    );
    const metrics = await (await fetch(relay.baseUrl.replace(/\/pos$/, '/metrics'))).text();
    expect(metrics).toMatch(/tps_security_events_total\{event="card_number_in_text"\} [1-9]/);
  });

  it('masks them in a screen message', async () => {
    const { terminal, publishReport } = await terminalReporting({});
    await publishReport({
      type: 'status',
      at: new Date().toISOString(),
      readings: { connected: true, screen_message: `Card ${GROUPED} read` },
    });
    const status = await eventually(
      () =>
        post(
          relay.baseUrl,
          'v1',
          '/terminal/status',
          { terminal_id: terminal.terminal_id },
          terminal,
        ),
      (r) => r.body.status?.screen_message !== undefined,
      { what: 'the screen message' },
    );
    expect(status.body.status.screen_message).toBe(`Card ${GROUPED_MASKED} read`);
    const events = await post(
      relay.baseUrl,
      'v1',
      '/event/list',
      { filter: { subject: { eq: terminal.terminal_id } } },
      terminal,
    );
    expect(shows(events.body)).toEqual([]);
    expect(storeHolds(GROUPED)).toBe(false);
    expect(securityEvents('card_number_in_text')).toContainEqual(
      expect.objectContaining({
        terminalId: terminal.terminal_id,
        fields: ['readings.screen_message'],
      }),
    );
  });

  it('masks them in what an agent says of itself, of its configuration and in a diagnostic', async () => {
    const { terminal, agent, topics } = await terminalReporting({});
    const at = new Date().toISOString();
    const account = (operation: string, body: object) =>
      post(relay.baseUrl, 'v1', operation, body, TEST_ACCOUNT);
    await agent.publishAsync(
      topics.facts,
      JSON.stringify({
        agent_version: '1.0.0',
        reader: { protocol: 'zvt', model: `T ${VISA}`, firmware: GROUPED },
        at,
      }),
      { qos: 1, retain: true },
    );
    await agent.publishAsync(
      topics.configReport,
      JSON.stringify({
        version: '0123456789abcdef',
        status: 'REJECTED',
        reason: `card ${AMEX_GROUPED} in the way`,
        at,
      }),
      { qos: 1, retain: true },
    );
    const facts = await eventually(
      () => account('/fleet/facts', { terminal_id: terminal.terminal_id }),
      (r) => r.body.terminals?.[0]?.reader_model !== null,
      { what: 'the fleet facts' },
    );
    expect(facts.body.terminals[0]).toMatchObject({
      reader_model: 'T 411111******1111',
      reader_firmware: GROUPED_MASKED,
    });
    const config = await eventually(
      () => account('/fleet/config/get', { scope: { terminal_id: terminal.terminal_id } }),
      (r) => r.body.terminals?.[0]?.reported !== null,
      { what: 'the configuration report' },
    );
    expect(config.body.terminals[0].reported.reason).toBe('card 3782-82****-*0005 in the way');

    // A diagnostic answer is served masked.
    await agent.subscribeAsync(topics.diagnostic, { qos: 1 });
    await agent.publishAsync(topics.presence, '{"connected":true}', { qos: 1, retain: true });
    await eventually(
      () =>
        post(
          relay.baseUrl,
          'v1',
          '/terminal/status',
          { terminal_id: terminal.terminal_id },
          terminal,
        ),
      (r) => r.body.status?.connected === true,
      { what: 'the terminal online' },
    );
    agent.on('message', (topic, payload) => {
      if (topic !== topics.diagnostic) return;
      const request = JSON.parse(payload.toString()) as { request_id: string };
      agent.publish(
        topics.diagnosticReply,
        JSON.stringify({
          request_id: request.request_id,
          kind: 'logs',
          logs: { lines: [`printed ${MASTERCARD}`], truncated: false },
        }),
        { qos: 1 },
      );
    });
    const diagnostic = await account('/fleet/diagnostics', {
      terminal_id: terminal.terminal_id,
      kind: 'logs',
    });
    expect(diagnostic.status).toBe(200);
    expect(diagnostic.body.logs.lines).toEqual(['printed 555555******4444']);

    for (const form of FULL_FORMS) expect(storeHolds(form), form).toBe(false);
    expect(logLines.flatMap(shows)).toEqual([]);
    const kinds = securityEvents('card_number_in_text')
      .filter((e) => e.terminalId === terminal.terminal_id)
      .map((e) => e.kind);
    expect(kinds).toEqual(expect.arrayContaining(['facts', 'config-report', 'diag-reply']));
  });
});

describe('card numbers in what an agent in local mode forwards, and in an end-of-day', () => {
  const localTransaction = (terminalId: string, externalId: string, over: object) => {
    const at = new Date().toISOString();
    return {
      type: 'local_transaction',
      transaction: {
        id: pairTransactionId(terminalId, externalId),
        external_id: externalId,
        terminal_id: terminalId,
        type: 'PURCHASE',
        state: 'AWAITING_CONFIRM',
        created_at: at,
        updated_at: at,
        requested_amount: 1234,
        authorized_amount: 1234,
        currency: 'EUR',
        result_code: 'SUCCESS',
        made_locally: true,
        ...over,
      },
    };
  };
  const get = (terminal: { terminal_id: string }, externalId: string) =>
    eventually(
      () =>
        post(
          relay.baseUrl,
          'v1',
          '/transaction/get',
          { terminal_id: terminal.terminal_id, external_id: externalId },
          TEST_ACCOUNT,
        ),
      (r) => r.status === 200,
      { what: `the forwarded ${externalId}` },
    );

  it('drops a full card number of a forwarded transaction and masks its free text', async () => {
    const { terminal, publishReport } = await terminalReporting({});
    await publishReport(
      localTransaction(terminal.terminal_id, 'local-pan-1', {
        payment_method_details: card(VISA),
        receipt_details_customer: `VISA\n${VISA}\n`,
      }),
    );
    await publishReport(
      localTransaction(terminal.terminal_id, 'local-text-1', {
        payment_method_details: card(MASKED),
        receipt_details_merchant: `PAN ${GROUPED}\n`,
        result_description: `Approved ${MASTERCARD_DOTTED}`,
      }),
    );
    const dropped = await get(terminal, 'local-pan-1');
    expect(dropped.body.transaction).toMatchObject({ result_code: 'SUCCESS', made_locally: true });
    expect(dropped.body.transaction.payment_method_details).toEqual({
      payment_method: 'CARD',
      card_scheme: 'VISA',
    });
    expect(dropped.body.transaction).not.toHaveProperty('receipt_details_customer');
    const masked = await get(terminal, 'local-text-1');
    expect(masked.body.transaction).toMatchObject({
      receipt_details_merchant: `PAN ${GROUPED_MASKED}\n`,
      result_description: 'Approved 5555.55**.****.4444',
    });
    for (const form of FULL_FORMS) expect(storeHolds(form), form).toBe(false);
    expect(logLines.flatMap(shows)).toEqual([]);
    const ours = (event: string) =>
      securityEvents(event).filter((e) => e.terminalId === terminal.terminal_id);
    expect(ours('unmasked_card_number')).toContainEqual(
      expect.objectContaining({
        transactionId: pairTransactionId(terminal.terminal_id, 'local-pan-1'),
      }),
    );
    expect(ours('card_number_in_text')).toContainEqual(
      expect.objectContaining({
        fields: ['transaction.result_description', 'transaction.receipt_details_merchant'],
      }),
    );
  });

  it('masks them in an end-of-day receipt and its result description', async () => {
    const { terminal, publishReport } = await terminalReporting({});
    const at = new Date().toISOString();
    await publishReport({
      type: 'settlement',
      settlement: {
        status: 'FAILED',
        trigger: 'ON_DEMAND',
        attempt: 1,
        started_at: at,
        finished_at: at,
        result_code: 'UNKNOWN_ERROR',
        result_description: `card ${AMEX_GROUPED} stuck`,
        receipt_text: `END OF DAY\n${VISA}\n`,
      },
    });
    const events = await eventually(
      () =>
        post(
          relay.baseUrl,
          'v1',
          '/event/list',
          { filter: { subject: { eq: terminal.terminal_id } } },
          TEST_ACCOUNT,
        ),
      (r) => JSON.stringify(r.body).includes('END OF DAY'),
      { what: 'the settlement event' },
    );
    expect(JSON.stringify(events.body)).toContain('3782-82****-*0005');
    expect(shows(events.body)).toEqual([]);
    for (const form of FULL_FORMS) expect(storeHolds(form), form).toBe(false);
  });
});
