/**
 * What the ZVT driver does beyond the common contract: recovery from its own record and
 * the terminal's journal after a crash at each step, profiles, screen texts, end-of-day,
 * and refusals of what a ZVT terminal cannot do. Against the emulated ZVT terminal over a
 * stream pair with the serial framing; the terminal's journal shows what it really did.
 */
import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ReaderStart } from '../../reader/card-reader.js';
import { newTransactionId } from '../../reader/testing/readers-under-test.js';
import { ZvtDriverState } from './driver-state.js';
import { emulatedZvtReader } from './testing/zvt-readers-under-test.js';
import { openZvtCardReader } from './zvt-card-reader.js';
import { createStreamPair } from '../../serial/stream-pair.js';
import { ZvtSerialLink } from '../serial-link.js';

const INSTANT = 100002;
const purchase = (id: string, amount: number, extra: Partial<ReaderStart> = {}): ReaderStart => ({
  transaction_id: id,
  kind: 'PURCHASE',
  requested_amount: amount,
  currency: 'EUR',
  pause_on_customer_identified: false,
  ...extra,
});

let under: ReturnType<typeof emulatedZvtReader>;
afterEach(async () => {
  await under?.close();
});

const entries = (kind: string) =>
  (under.terminal?.memory.all() ?? []).filter((entry) => entry.kind === kind);

describe('ZVT driver recovery', () => {
  it('a start recorded but never sent before the crash: CANCELLED, and never run later', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    const first = newTransactionId('first');
    await host.reader.start(purchase(first, INSTANT));
    await host.events.waitFor('result', (r) => r.transaction_id === first);
    await under.crash(host);
    // The agent wrote its record and died before 06 01 left.
    const id = newTransactionId('unsent');
    const state = new ZvtDriverState(under.stateFile);
    state.put({
      transaction_id: id,
      kind: 'PURCHASE',
      amount: 700,
      currency: 'EUR',
      phase: 'IN_PROGRESS',
      trace_before: state.lastTrace as number,
    });
    const restarted = await under.connect();
    expect(await restarted.reader.lastTransaction()).toMatchObject({
      transaction_id: id,
      phase: 'CANCELLED',
      result_code: 'ABORTED',
    });
    await restarted.reader.start(purchase(id, 700));
    const replay = await restarted.events.waitFor('result', (r) => r.transaction_id === id);
    expect(replay.phase).toBe('CANCELLED');
    expect(entries('PAYMENT')).toHaveLength(1);
  });

  it('a reversal the terminal did before the crash is not done twice', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    const id = newTransactionId('rev');
    await host.reader.start(purchase(id, INSTANT));
    await host.events.waitFor('result', (r) => r.transaction_id === id);
    await host.reader.reverse(id);
    await host.events.waitFor('result', (r) => r.result_code === 'REVERSED');
    await under.crash(host);
    // As if the agent died after 06 30 left and before it recorded the answer.
    const state = new ZvtDriverState(under.stateFile);
    const record = state.get(id);
    state.put({
      ...(record as NonNullable<typeof record>),
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      reversal_pending: true,
    });
    const restarted = await under.connect();
    expect(await restarted.reader.lastTransaction()).toMatchObject({
      transaction_id: id,
      phase: 'CANCELLED',
      result_code: 'REVERSED',
    });
    expect(entries('REVERSAL').filter((e) => e.approved)).toHaveLength(1);
  });

  it('a reversal that never reached the terminal is sent once after the crash', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    const id = newTransactionId('revlost');
    await host.reader.start(purchase(id, INSTANT));
    await host.events.waitFor('result', (r) => r.transaction_id === id);
    await under.crash(host);
    const state = new ZvtDriverState(under.stateFile);
    state.put({
      ...(state.get(id) as NonNullable<ReturnType<typeof state.get>>),
      reversal_pending: true,
    });
    const restarted = await under.connect();
    expect(await restarted.reader.lastTransaction()).toMatchObject({
      phase: 'CANCELLED',
      result_code: 'REVERSED',
    });
    expect(await restarted.reader.lastTransaction()).toMatchObject({ result_code: 'REVERSED' });
    expect(entries('REVERSAL')).toHaveLength(1);
  });

  it('a start still waiting its turn at the crash: CANCELLED without asking the terminal', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    await under.crash(host);
    const id = newTransactionId('queued');
    new ZvtDriverState(under.stateFile).put({
      transaction_id: id,
      kind: 'PURCHASE',
      amount: 900,
      currency: 'EUR',
      phase: 'IN_PROGRESS',
      queued: true,
    });
    const restarted = await under.connect();
    expect(await restarted.reader.lastTransaction()).toMatchObject({
      transaction_id: id,
      phase: 'CANCELLED',
    });
    expect(entries('PAYMENT')).toHaveLength(0);
  });

  it('a start cancelled while it waits its turn is never sent', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    const id = newTransactionId('cancelqueued');
    const status = host.reader.status();
    const started = host.reader.start(purchase(id, 1234));
    await host.reader.cancel(id);
    await Promise.all([status, started]);
    expect(await host.events.waitFor('result', (r) => r.transaction_id === id)).toMatchObject({
      phase: 'CANCELLED',
      result_code: 'ABORTED',
    });
    expect(await host.reader.lastTransaction()).toMatchObject({
      transaction_id: id,
      phase: 'CANCELLED',
    });
    expect(host.events.all('result').filter((r) => r.transaction_id === id)).toHaveLength(1);
    expect(entries('PAYMENT')).toHaveLength(0);
  });

  it('refuses to open on a state file it cannot read, saying why', async () => {
    under = emulatedZvtReader();
    writeFileSync(under.stateFile, '{"format":"something else"}');
    const pair = createStreamPair();
    await expect(
      openZvtCardReader({ channel: new ZvtSerialLink(pair.a), stateFile: under.stateFile }),
    ).rejects.toThrow(/not valid/);
    pair.a.destroy();
  });
});

describe('ZVT driver', () => {
  it('shows the terminal intermediate status as progress screen texts and status', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    const id = newTransactionId('screen');
    await host.reader.start(purchase(id, 1234));
    await host.events.waitFor('result', (r) => r.transaction_id === id);
    const texts = host.events.all('progress').map((p) => p.screen_text);
    expect(texts).toEqual(['Insert card', 'Please wait']);
    expect(host.events.all('status').map((s) => s.screen_message)).toContain('Insert card');
    expect(await host.reader.status()).toEqual({ plugged_in: true, screen_message: 'Ready' });
  });

  it('brings the receipts of the terminal, merchant and customer copy, within the limits', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    const id = newTransactionId('receipt');
    await host.reader.start(purchase(id, INSTANT));
    const result = await host.events.waitFor('result', (r) => r.transaction_id === id);
    expect(result.details?.receipt_details_merchant).toMatch(/MERCHANT COPY\n$/);
    expect(result.details?.receipt_details_customer).toMatch(/CUSTOMER COPY\n$/);
    expect(result.details?.reference).toMatch(/^29001001-\d{4}-\d{6}$/);
  });

  it('refuses a currency it is not registered for, charging nothing', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    const id = newTransactionId('usd');
    await host.reader.start(purchase(id, 500, { currency: 'USD' }));
    expect(await host.events.waitFor('result', (r) => r.transaction_id === id)).toMatchObject({
      result_code: 'WRONG_CURRENCY',
      details: { authorized_amount: 0 },
    });
    expect(entries('PAYMENT')).toHaveLength(0);
  });

  it('without 06 B0 (global-payments), cancel leaves the payment to the terminal', async () => {
    under = emulatedZvtReader({ profile: 'global-payments' });
    const host = await under.connect();
    expect(host.reader.capabilities.cancel).toBe(false);
    const id = newTransactionId('nocancel');
    await host.reader.start(purchase(id, 1234));
    await host.events.waitFor('progress', (p) => p.transaction_id === id);
    await host.reader.cancel(id);
    expect(await host.events.waitFor('result', (r) => r.transaction_id === id)).toMatchObject({
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
    });
  });

  it('runs an end-of-day with the totals of the batch', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    const id = newTransactionId('eod');
    await host.reader.start(purchase(id, INSTANT));
    await host.events.waitFor('result', (r) => r.transaction_id === id);
    const outcome = await host.reader.endOfDay();
    expect(outcome).toMatchObject({
      kind: 'completed',
      result: { resultCode: 0, amount: INSTANT },
    });
  });
});

describe('ZVT driver and the trigger amounts of the emulated terminal', () => {
  // 100001 (2 s) and 100020 (30 s) only wait longer; the contract cancels 100020.
  const triggers: [number, string, string?][] = [
    [100002, 'SUCCESS'],
    [100003, 'PROCESSOR_REJECTED'],
    [100004, 'ABORTED'],
    [100005, 'CARD_REMOVED'],
    [100006, 'DECLINED_BY_ISSUER'],
    [100007, 'SYSTEM_ERROR'],
    [100008, 'NETWORK_ERROR'],
    [100009, 'CARD_NOT_ACCEPTED'],
    [100010, 'SUCCESS', 'VISA'],
    [100016, 'SUCCESS', 'GIROCARD'],
  ];
  // The card read as the 04 0F's TLV tells it (TLV output activated at registration).
  const reads: [number, string, string][] = [
    [100010, 'CONTACTLESS_EMV', 'PIN'],
    [100012, 'CONTACT_EMV', 'NONE'],
    [100014, 'MAGNETIC_STRIPE', 'SIGNATURE'],
  ];
  it('reports the outcome each trigger amount stands for, as the native reader does', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    for (const [amount, code, scheme] of triggers) {
      const id = newTransactionId(String(amount));
      await host.reader.start(purchase(id, amount));
      const result = await host.events.waitFor('result', (r) => r.transaction_id === id);
      expect({ amount, code: result.result_code, phase: result.phase }).toEqual({
        amount,
        code,
        phase: 'COMPLETED',
      });
      expect(result.details?.authorized_amount).toBe(code === 'SUCCESS' ? amount : 0);
      if (scheme) expect(result.details?.payment_method_details?.card_scheme).toBe(scheme);
    }
  });

  it('reports how the card was read: entry mode, cardholder verification, AID', async () => {
    under = emulatedZvtReader();
    const host = await under.connect();
    for (const [amount, mode, verification] of reads) {
      const id = newTransactionId(String(amount));
      await host.reader.start(purchase(id, amount));
      const result = await host.events.waitFor('result', (r) => r.transaction_id === id);
      const method = result.details?.payment_method_details;
      expect(method).toMatchObject({
        card_entry_mode: mode,
        cardholder_verification: verification,
      });
      // Chip and contactless reads have an application; a stripe has none.
      if (mode !== 'MAGNETIC_STRIPE') expect(method?.application_identifier).toMatch(/^A0{5}/);
    }
  });
});
