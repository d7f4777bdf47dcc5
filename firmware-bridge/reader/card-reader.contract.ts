/**
 * What every card reader must do, driven through the driver only: one suite, run against
 * the emulated firmware on a stream pair, on a noisy line, on a pty, and against a real
 * reader (`TEST_READER_PORT`). Amounts are the trigger amounts of docs/simulator.md.
 */
import { afterEach, beforeEach, expect, it as vitestIt } from 'vitest';
import {
  NATIVE_READER_CAPABILITIES,
  type ReaderCapabilities,
} from '../../protocol/reader-capabilities.js';
import type { ReaderResult, ReaderStart } from './card-reader.js';
import {
  newTransactionId,
  type ConnectedReader,
  type ReaderUnderTest,
} from './testing/readers-under-test.js';

const INSTANT = 100002;
const DECLINED = 100006;
const SLOW = 100020; // 30 s: always still running when the test cancels it

export function describeCardReaderContract(
  make: () => Promise<ReaderUnderTest>,
  options: {
    /** Per test and hook; real readers need more than the default. */
    testTimeoutMs?: number;
    /**
     * What the reader says it can do: cases for what it cannot do check that it refuses
     * with a clear result instead (default: the native reader's, everything).
     */
    capabilities?: ReaderCapabilities;
    /**
     * The amount the reader declines (default the emulator's trigger amount), or why the
     * decline case cannot run (a real terminal whose host approves any amount).
     */
    decline?: { amount: number } | { skip: string };
  } = {},
): void {
  let under: ReaderUnderTest;
  let host: ConnectedReader;
  const timeout = options.testTimeoutMs;
  const can = options.capabilities ?? NATIVE_READER_CAPABILITIES;
  const it = (name: string, test: () => Promise<void>) => vitestIt(name, test, timeout);
  const itIf = (condition: boolean, name: string, test: () => Promise<void>) =>
    vitestIt.skipIf(!condition)(name, test, timeout);

  beforeEach(async () => {
    under = await make();
    host = await under.connect();
  }, timeout);
  afterEach(async () => {
    await under.close();
  }, timeout);

  const purchase = (id: string, amount: number, extra: Partial<ReaderStart> = {}): ReaderStart => ({
    transaction_id: id,
    kind: 'PURCHASE',
    requested_amount: amount,
    currency: 'EUR',
    pause_on_customer_identified: false,
    ...extra,
  });

  /** The first result for `id` from `since` on. */
  const resultOf = (id: string, since = 0, on = host): Promise<ReaderResult> =>
    on.events.waitFor('result', (r) => r.transaction_id === id, {
      since,
      timeoutMs: under.timeoutMs,
    });

  /** Asks the reader's record until it is final (the reader works on while the host is away). */
  async function finalRecord(on: ConnectedReader, id: string) {
    const deadline = Date.now() + under.timeoutMs;
    for (;;) {
      const record = await on.reader.lastTransaction();
      expect(record?.transaction_id).toBe(id);
      if (record?.phase === 'COMPLETED' || record?.phase === 'CANCELLED') return record;
      if (Date.now() > deadline) throw new Error(`${id} still ${record?.phase}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('runs a purchase to success, with progress and screen texts', async () => {
    const id = newTransactionId('buy');
    await host.reader.start(purchase(id, 1234));
    const result = await resultOf(id);
    expect(result).toMatchObject({ phase: 'COMPLETED', result_code: 'SUCCESS' });
    expect(result.details).toMatchObject({ authorized_amount: 1234, total_amount: 1234 });
    expect(result.details?.payment_method_details?.card_number_merchant).toMatch(/\*{6}/);
    const progress = host.events.all('progress').filter((p) => p.transaction_id === id);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]?.screen_text).toMatch(/\S/);
    expect(await host.reader.lastTransaction()).toMatchObject({
      transaction_id: id,
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
    });
  });

  it('says what it can do', async () => {
    expect(host.reader.capabilities).toEqual(can);
  });

  it('runs a referenced refund and, where it can, an account check', async () => {
    const refund = newTransactionId('refund');
    await host.reader.start({
      ...purchase(refund, 500),
      kind: 'REFUND',
      original_reference: '0042-17',
    });
    expect(await resultOf(refund)).toMatchObject({
      result_code: 'SUCCESS',
      details: { authorized_amount: 500 },
    });
    const check = newTransactionId('check');
    await host.reader.start({ ...purchase(check, 0), kind: 'ACCOUNT_CHECK' });
    expect(await resultOf(check)).toMatchObject({
      result_code: can.account_check ? 'SUCCESS' : 'NOT_SUPPORTED',
      details: { authorized_amount: 0 },
    });
  });

  itIf(
    !can.pause_on_customer_identified,
    'refuses a pause it cannot make, charging nothing',
    async () => {
      const id = newTransactionId('nopause');
      await host.reader.start(purchase(id, 1000, { pause_on_customer_identified: true }));
      const result = await resultOf(id);
      expect(result).toMatchObject({
        phase: 'COMPLETED',
        result_code: 'NOT_SUPPORTED',
        details: { authorized_amount: 0 },
      });
      expect(result.result_description).toMatch(/customer identification/);
      expect(await host.reader.lastTransaction()).toMatchObject({
        transaction_id: id,
        result_code: 'NOT_SUPPORTED',
      });
    },
  );

  itIf(!can.cashback, 'refuses cashback it cannot pay out, charging nothing', async () => {
    const id = newTransactionId('nocashback');
    await host.reader.start(purchase(id, 1000, { cashback_amount: 500 }));
    expect(await resultOf(id)).toMatchObject({
      phase: 'COMPLETED',
      result_code: 'NOT_SUPPORTED',
      details: { authorized_amount: 0 },
    });
  });

  const decline = options.decline ?? { amount: DECLINED };
  const declineName = 'reports a decline as a completed error, with nothing authorized';
  itIf(
    'amount' in decline,
    'skip' in decline ? `${declineName} (skipped: ${decline.skip})` : declineName,
    async () => {
      const id = newTransactionId('decline');
      await host.reader.start(purchase(id, 'amount' in decline ? decline.amount : DECLINED));
      expect(await resultOf(id)).toMatchObject({
        phase: 'COMPLETED',
        result_code: 'DECLINED_BY_ISSUER',
        details: { authorized_amount: 0 },
      });
    },
  );

  itIf(
    can.pause_on_customer_identified,
    'pauses at the customer-identified point and continues with a new amount',
    async () => {
      const id = newTransactionId('pause');
      await host.reader.start(purchase(id, 1000, { pause_on_customer_identified: true }));
      const identified = await host.events.waitFor(
        'customer_identified',
        (c) => c.transaction_id === id,
        { timeoutMs: under.timeoutMs },
      );
      expect(identified.customer_identity).toBeTruthy();
      expect(host.events.all('result').some((r) => r.transaction_id === id)).toBe(false);
      expect(await host.reader.lastTransaction()).toMatchObject({
        transaction_id: id,
        phase: 'CUSTOMER_IDENTIFIED',
      });
      await host.reader.continue(id, 1500);
      expect(await resultOf(id)).toMatchObject({
        result_code: 'SUCCESS',
        details: { total_amount: 1500 },
      });
    },
  );

  itIf(can.cancel, 'cancels a running transaction: CANCELLED, nothing charged', async () => {
    const id = newTransactionId('cancel');
    await host.reader.start(purchase(id, SLOW));
    await host.events.waitFor('progress', (p) => p.transaction_id === id);
    await host.reader.cancel(id);
    const result = await resultOf(id);
    expect(result.phase).toBe('CANCELLED');
    expect(await host.reader.lastTransaction()).toMatchObject({
      transaction_id: id,
      phase: 'CANCELLED',
    });
  });

  it('reverses a success, once, and says so again when asked again', async () => {
    const id = newTransactionId('reverse');
    await host.reader.start(purchase(id, INSTANT));
    expect(await resultOf(id)).toMatchObject({ phase: 'COMPLETED', result_code: 'SUCCESS' });
    let since = host.events.mark();
    await host.reader.reverse(id);
    const reversed = await resultOf(id, since);
    expect(reversed).toMatchObject({ phase: 'CANCELLED', result_code: 'REVERSED' });
    since = host.events.mark();
    await host.reader.reverse(id);
    expect(await resultOf(id, since)).toEqual(reversed);
    expect(await host.reader.lastTransaction()).toMatchObject({
      transaction_id: id,
      phase: 'CANCELLED',
      result_code: 'REVERSED',
    });
  });

  it('never runs a transaction twice: a repeated start gets the existing result', async () => {
    const id = newTransactionId('twice');
    await host.reader.start(purchase(id, INSTANT));
    const first = await resultOf(id);
    const since = host.events.mark();
    await host.reader.start(purchase(id, 777));
    const again = await resultOf(id, since);
    expect(again).toEqual(first);
    expect(again.details?.reference).toBe(first.details?.reference);
  });

  itIf(can.cancel, 'a start repeated while running does not start a second run', async () => {
    const id = newTransactionId('rerun');
    await host.reader.start(purchase(id, SLOW));
    await host.events.waitFor('progress', (p) => p.transaction_id === id);
    const since = host.events.mark();
    await host.reader.start(purchase(id, SLOW));
    await host.events.waitFor('progress', (p) => p.transaction_id === id, { since });
    expect(await host.reader.lastTransaction()).toMatchObject({
      transaction_id: id,
      phase: 'IN_PROGRESS',
    });
    await host.reader.cancel(id);
    expect((await resultOf(id, since)).phase).toBe('CANCELLED');
  });

  it('tells a new host the true outcome after the host crashed mid-transaction', async () => {
    const id = newTransactionId('crash');
    await host.reader.start(purchase(id, 4321));
    await host.events.waitFor('progress', (p) => p.transaction_id === id);
    await under.crash(host);
    const restarted = await under.connect();
    const record = await finalRecord(restarted, id);
    expect(record).toMatchObject({ phase: 'COMPLETED', result_code: 'SUCCESS' });
    expect(record.details).toMatchObject({ total_amount: 4321 });
    // The new host re-sends the start it journaled: answered, not run again.
    await restarted.reader.start(purchase(id, 4321));
    const replayed = await resultOf(id, 0, restarted);
    expect(replayed.details?.reference).toBe(record.details?.reference);
  });

  itIf(
    can.pause_on_customer_identified,
    'lets a new host continue a transaction that was paused when the host crashed',
    async () => {
      const id = newTransactionId('crashpause');
      await host.reader.start(purchase(id, 2500, { pause_on_customer_identified: true }));
      await host.events.waitFor('customer_identified', (c) => c.transaction_id === id, {
        timeoutMs: under.timeoutMs,
      });
      await under.crash(host);
      const restarted = await under.connect();
      const record = await restarted.reader.lastTransaction();
      expect(record).toMatchObject({ transaction_id: id, phase: 'CUSTOMER_IDENTIFIED' });
      expect(record?.details?.customer_identity).toBeTruthy();
      await restarted.reader.continue(id);
      expect(await resultOf(id, 0, restarted)).toMatchObject({ result_code: 'SUCCESS' });
    },
  );

  it('answers a status query', async () => {
    const status = await host.reader.status();
    expect(status.screen_message).toMatch(/\S/);
    expect(typeof status.plugged_in).toBe('boolean');
    if (status.battery_percentage !== undefined) {
      expect(status.battery_percentage).toBeGreaterThanOrEqual(0);
      expect(status.battery_percentage).toBeLessThanOrEqual(100);
    }
  });

  it('refuses to run later what it said it would not charge (cancel of an unknown id)', async () => {
    const id = newTransactionId('ghost');
    await host.reader.cancel(id);
    expect((await resultOf(id)).phase).toBe('CANCELLED');
    const since = host.events.mark();
    await host.reader.start(purchase(id, INSTANT));
    expect((await resultOf(id, since)).phase).toBe('CANCELLED');
  });
}
