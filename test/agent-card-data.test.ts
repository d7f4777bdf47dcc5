/**
 * No full card number leaves the terminal in the agent's free text. A reader (a ZVT
 * terminal's driver passes its print lines on untouched) that puts a card number, plain or
 * in groups, on a receipt line, in a result description or on its screen: the agent
 * publishes its reports with each masked to the first 6 and last 4 digits, keeps none in
 * its journal, and logs a security event without the digits. The same for the reader's
 * model and firmware in the fleet's facts. Real agent, real broker (aedes on a TCP port),
 * a test relay on the other side.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import mqtt from 'mqtt';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '../agent/agent.js';
import { ScriptedReader } from '../agent/testing/scripted-reader.js';
import { terminalTopics } from '../protocol/index.js';
import {
  TestRelay,
  agentConfig,
  startAedes,
  startCommand,
  type TestBroker,
} from './agent-harness.js';

const VISA = '4111111111111111';
const GROUPED = '4012 8888 8888 1881';
const AMEX_GROUPED = '3782-822463-10005';
const FULL_FORMS = [VISA, GROUPED, AMEX_GROUPED, '4012888888881881', '378282246310005'];
const shows = (text: string) => FULL_FORMS.filter((form) => text.includes(form));

let broker: TestBroker;
let relay: TestRelay;
beforeAll(async () => {
  broker = await startAedes();
  relay = new TestRelay(broker.url);
  await relay.connected();
});
afterAll(async () => {
  await relay.close();
  await broker.stop();
});

describe('card numbers in what the agent reports', () => {
  it('masks them in receipts, the result description, the screen message and the facts before they leave', async () => {
    const terminalId = 'T-card-text';
    const logLines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _encoding, callback) {
          logLines.push(...chunk.toString().split('\n').filter(Boolean));
          callback();
        },
      }),
    );
    const facts = await mqtt.connectAsync(broker.url, { reconnectPeriod: 0 });
    const published: string[] = [];
    facts.on('message', (_topic, payload) => published.push(payload.toString()));
    await facts.subscribeAsync(terminalTopics(terminalId).facts, { qos: 1 });

    const reader = new ScriptedReader();
    const config = agentConfig({ terminal_id: terminalId, broker: { url: broker.url } });
    const agent = await startAgent(config, {
      reader,
      logger,
      fleet: { reader: { model: `ZVT ${VISA}`, firmware: GROUPED } },
      tuning: { reconnect: { initialMs: 20, maxMs: 200 } },
    });
    try {
      await relay.until(
        () => relay.presence.some((p) => p.terminalId === terminalId && p.connected),
        5000,
        'agent connected',
      );
      relay.send(terminalId, startCommand('tx-card-text'));
      await relay.until(() => reader.of('start').length === 1, 5000, 'the start at the reader');
      reader.emit('progress', {
        transaction_id: 'tx-card-text',
        screen_text: `Card ${GROUPED}`,
      });
      reader.emit('result', {
        transaction_id: 'tx-card-text',
        phase: 'COMPLETED',
        result_code: 'SUCCESS',
        result_description: `Approved ${AMEX_GROUPED}`,
        details: {
          authorized_amount: 1000,
          receipt_details_customer: `VISA\nCARD ${VISA}\nEUR 10.00\n`,
          receipt_details_merchant: `PAN ${GROUPED}\n27.11.2026 TID 12345678\n`,
        },
      });
      await relay.until(() => relay.final('tx-card-text') !== undefined, 5000, 'the result');
      await relay.until(
        () => relay.statuses(terminalId).some((s) => s.readings.screen_message?.startsWith('Card')),
        5000,
        'the screen message',
      );
      await relay.until(() => published.length > 0, 5000, 'the facts');

      expect(relay.final('tx-card-text')).toMatchObject({
        result_description: 'Approved 3782-82****-*0005',
        details: {
          receipt_details_customer: 'VISA\nCARD 411111******1111\nEUR 10.00\n',
          receipt_details_merchant: 'PAN 4012 88** **** 1881\n27.11.2026 TID 12345678\n',
        },
      });
      expect(
        relay.statuses(terminalId).find((s) => s.readings.screen_message?.startsWith('Card'))
          ?.readings.screen_message,
      ).toBe('Card 4012 88** **** 1881');
      expect(JSON.parse(published.at(-1)!)).toMatchObject({
        reader: { model: 'ZVT 411111******1111', firmware: '4012 88** **** 1881' },
      });

      // Nothing of the numbers was published, journaled or logged.
      expect(relay.received.flatMap((m) => shows(JSON.stringify(m)))).toEqual([]);
      expect(published.flatMap(shows)).toEqual([]);
      for (const file of ['agent.sqlite', 'agent.sqlite-wal']) {
        const full = path.join(config.data_dir, file);
        if (fs.existsSync(full)) expect(shows(fs.readFileSync(full, 'latin1')), file).toEqual([]);
      }
      expect(logLines.flatMap(shows)).toEqual([]);
      const events = logLines
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line.security_event === 'card_number_in_text');
      expect(events).toContainEqual(
        expect.objectContaining({
          kind: 'report',
          transactionId: 'tx-card-text',
          fields: [
            'result_description',
            'details.receipt_details_customer',
            'details.receipt_details_merchant',
          ],
        }),
      );
      expect(events).toContainEqual(
        expect.objectContaining({ kind: 'status', fields: ['readings.screen_message'] }),
      );
      expect(events).toContainEqual(
        expect.objectContaining({ kind: 'facts', fields: ['reader.model', 'reader.firmware'] }),
      );
    } finally {
      await agent.stop();
      await facts.endAsync(true);
    }
  });
});
