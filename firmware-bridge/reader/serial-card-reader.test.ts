/** The driver's own rules, against a reader link driven by hand. */
import { describe, expect, it } from 'vitest';
import { SerialLinkError } from '../serial/errors.js';
import { SerialLink } from '../serial/link.js';
import type { HostMessage } from '../serial/messages.js';
import { createStreamPair } from '../serial/stream-pair.js';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { SerialCardReader } from './serial-card-reader.js';

function setup() {
  const pair = createStreamPair();
  const timers = new ManualTimers();
  const reader = SerialCardReader.connect(pair.a, { timers, answerTimeoutMs: 1000 });
  const firmware = new SerialLink(pair.b, { role: 'reader' });
  const received: HostMessage[] = [];
  firmware.on('message', (m) => received.push(m));
  /** Waits until the firmware has received `count` messages. */
  const receivedCount = async (count: number) => {
    while (received.length < count) await pair.idle();
    return received[count - 1] as HostMessage;
  };
  return { pair, timers, reader, firmware, received, receivedCount };
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as SerialLinkError,
  );

describe('SerialCardReader', () => {
  it('times out a query the reader took and never answered: ANSWER_TIMEOUT, not disconnected', async () => {
    const { pair, timers, reader, receivedCount } = setup();
    const asked = failure(reader.lastTransaction());
    await receivedCount(1);
    await pair.idle(); // the ACK is back: the answer timer runs
    expect(timers.fireNext()).toBe(true);
    const error = await asked;
    expect(error).toBeInstanceOf(SerialLinkError);
    expect(error).toMatchObject({ code: 'ANSWER_TIMEOUT', disconnected: false });
    await reader.close();
  });

  it('never takes a late answer to an earlier query for the answer to a later one', async () => {
    const { pair, timers, reader, firmware, receivedCount } = setup();
    const first = failure(reader.status());
    const firstQuery = await receivedCount(1);
    await pair.idle();
    timers.fireNext();
    expect((await first).code).toBe('ANSWER_TIMEOUT');
    const second = reader.status();
    const secondQuery = await receivedCount(2);
    const idOf = (m: HostMessage) => (m.type === 'status.query' ? m.query_id : undefined);
    expect(idOf(firstQuery)).toBeDefined();
    expect(idOf(secondQuery)).not.toBe(idOf(firstQuery));
    await firmware.send({
      v: 1,
      type: 'status.report',
      query_id: idOf(firstQuery),
      battery_percentage: 10,
    });
    await firmware.send({
      v: 1,
      type: 'status.report',
      query_id: idOf(secondQuery),
      battery_percentage: 20,
    });
    expect(await second).toEqual({ battery_percentage: 20 });
    await reader.close();
  });

  it('takes answers without a query id from firmware that does not echo it', async () => {
    const { reader, firmware, receivedCount } = setup();
    const last = reader.lastTransaction();
    await receivedCount(1);
    await firmware.send({ v: 1, type: 'last_transaction.answer', transaction: null });
    expect(await last).toBeUndefined();
    const status = reader.status();
    await receivedCount(2);
    await firmware.send({ v: 1, type: 'status.report', plugged_in: true });
    expect(await status).toEqual({ plugged_in: true });
    await reader.close();
  });

  it('emits every status report, and each transaction event without its envelope', async () => {
    const { reader, firmware } = setup();
    const seen: unknown[] = [];
    reader.on('status', (s) => seen.push(['status', s]));
    reader.on('progress', (p) => seen.push(['progress', p]));
    reader.on('result', (r) => seen.push(['result', r]));
    await firmware.send({ v: 1, type: 'status.report', screen_message: 'Ready' });
    await firmware.send({
      v: 1,
      type: 'transaction.progress',
      transaction_id: 't1',
      screen_text: 'Tap',
    });
    await firmware.send({
      v: 1,
      type: 'transaction.result',
      transaction_id: 't1',
      phase: 'CANCELLED',
      result_code: 'ABORTED',
    });
    expect(seen).toEqual([
      ['status', { screen_message: 'Ready' }],
      ['progress', { transaction_id: 't1', screen_text: 'Tap' }],
      ['result', { transaction_id: 't1', phase: 'CANCELLED', result_code: 'ABORTED' }],
    ]);
    await reader.close();
  });

  it('refuses an invalid start before sending anything', async () => {
    const { reader, received } = setup();
    const error = await failure(
      reader.start({
        transaction_id: 'tx-1',
        kind: 'REFUND',
        requested_amount: 100,
        currency: 'EUR',
        cashback_amount: 5,
        pause_on_customer_identified: false,
      }),
    );
    expect(error).toMatchObject({ code: 'INVALID_MESSAGE', disconnected: false });
    expect(error.reason).toMatch(/cashback_amount/);
    expect(received).toEqual([]);
    await reader.close();
  });

  it('fails pending queries with PORT_CLOSED (disconnected) when the cable is pulled', async () => {
    const { pair, reader, receivedCount } = setup();
    const closed = new Promise((resolve) => reader.once('close', resolve));
    const asked = failure(reader.lastTransaction());
    await receivedCount(1);
    pair.b.destroy();
    expect(await asked).toMatchObject({ code: 'PORT_CLOSED', disconnected: true });
    expect(await closed).toMatchObject({ code: 'PORT_CLOSED' });
    expect(await failure(reader.cancel('tx-1'))).toMatchObject({ code: 'LINK_CLOSED' });
  });

  it('fails pending queries with LINK_CLOSED on close(), and every later call', async () => {
    const { reader } = setup();
    const asked = failure(reader.status());
    await reader.close();
    expect(await asked).toMatchObject({ code: 'LINK_CLOSED', disconnected: false });
    expect(await failure(reader.lastTransaction())).toMatchObject({ code: 'LINK_CLOSED' });
  });
});
