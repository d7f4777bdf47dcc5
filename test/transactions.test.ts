/**
 * The transaction service end to end: real HTTP, a real SQLite file, simulated terminals.
 * Each row of the spec's transition table as a POS sees it.
 */
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../cloud/accounts/secrets.js';
import { posFor, post, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
beforeAll(async () => {
  relay = await startTestRelay({
    simulatorDelayMs: 150,
    maxUnconfirmed: 2,
    pauseTimeoutS: 0.4,
    gracePeriodS: 0.4,
  });
});
afterAll(async () => {
  await relay.close();
});

const newPos = async () => posFor(relay, await relay.newSimulator());
const INSTANT = 100002;

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 5000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('create', () => {
  it('is idempotent: a repeat answers the same transaction', async () => {
    const pos = await newPos();
    const body = { external_id: 'o-1', requested_amount: 500, currency: 'EUR' };
    const first = await pos.call('/transaction/purchase', {
      ...body,
      options: { wait_seconds: 0 },
    });
    expect(first.body.transaction.state).toBe('PROCESSING');
    const again = await pos.call('/transaction/purchase', body);
    expect(again.body.transaction.id).toBe(first.body.transaction.id);
    expect(again.body.transaction.state).toBe('AWAITING_CONFIRM');
  });

  it('50 concurrent duplicates make exactly one transaction', async () => {
    const pos = await newPos();
    const body = {
      external_id: 'dup',
      requested_amount: INSTANT,
      currency: 'EUR',
      wait_seconds: 0,
    };
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => pos.call('/transaction/purchase', body)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    expect(new Set(answers.map((a) => a.body.transaction.id)).size).toBe(1);
    const unconfirmed = await pos.call('/transaction/unconfirmed', {});
    expect(unconfirmed.body.transactions).toHaveLength(1);
  });

  it('a repeat with another amount is refused, not merged', async () => {
    const pos = await newPos();
    await pos.call('/transaction/purchase', {
      external_id: 'm',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    const other = await pos.call('/transaction/purchase', {
      external_id: 'm',
      requested_amount: 1,
      currency: 'EUR',
    });
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe('IDEMPOTENCY_MISMATCH');
  });

  it('one transaction at a time per terminal', async () => {
    const pos = await newPos();
    await pos.call('/transaction/purchase', {
      external_id: 'a',
      requested_amount: 700,
      currency: 'EUR',
      wait_seconds: 0,
    });
    const second = await pos.call('/transaction/purchase', {
      external_id: 'b',
      requested_amount: 700,
      currency: 'EUR',
    });
    expect(second.status).toBe(400);
    expect(second.body.error.code).toBe('TERMINAL_BUSY');
  });

  it('refuses new transactions while too many are unconfirmed, until they are confirmed', async () => {
    const pos = await newPos();
    for (const id of ['u1', 'u2']) {
      const done = await pos.call('/transaction/purchase', {
        external_id: id,
        requested_amount: INSTANT,
        currency: 'EUR',
      });
      expect(done.body.transaction.state).toBe('AWAITING_CONFIRM');
    }
    const refused = await pos.call('/transaction/purchase', {
      external_id: 'u3',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('TOO_MANY_UNCONFIRMED');
    await pos.call('/transaction/confirm', { external_id: 'u1', result_code: 'SUCCESS' });
    const accepted = await pos.call('/transaction/purchase', {
      external_id: 'u3',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    expect(accepted.status).toBe(200);
  });
});

describe('long polling', () => {
  it('answers as soon as the state leaves PROCESSING, and at once with wait 0', async () => {
    const pos = await newPos();
    const quick = await pos.call('/transaction/purchase', {
      external_id: 'lp',
      requested_amount: 900,
      currency: 'EUR',
      options: { wait_seconds: 0 },
    });
    expect(quick.body.transaction.state).toBe('PROCESSING');
    const started = Date.now();
    const woken = await pos.call('/transaction/get', {
      external_id: 'lp',
      options: { wait_seconds: 25 },
    });
    expect(woken.body.transaction.state).toBe('AWAITING_CONFIRM');
    // Woken by the change, far before the 25 s the request allowed.
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('honours wait_seconds at the top level, and options.wait_seconds over it', async () => {
    const pos = await newPos();
    const top = await pos.call('/transaction/purchase', {
      external_id: 'top',
      requested_amount: 900,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(top.body.transaction.state).toBe('PROCESSING');
    await until(
      () => pos.call('/transaction/get', { external_id: 'top', wait_seconds: 0 }),
      (r) => r.body.transaction.state !== 'PROCESSING',
    );
    const pos2 = await newPos();
    const both = await pos2.call('/transaction/purchase', {
      external_id: 'both',
      requested_amount: 900,
      currency: 'EUR',
      wait_seconds: 0,
      options: { wait_seconds: 20 },
    });
    expect(both.body.transaction.state).toBe('AWAITING_CONFIRM');
  });

  it('frees a parked long poll when the client goes away', async () => {
    const pos = await newPos();
    await pos.call('/transaction/purchase', {
      external_id: 'gone',
      requested_amount: 100020, // 30 s
      currency: 'EUR',
      options: { wait_seconds: 0 },
    });
    const before = relay.service.feed.size;
    const abort = new AbortController();
    const parked = post(
      relay.baseUrl,
      'v1',
      '/transaction/get',
      { terminal_id: pos.terminalId, external_id: 'gone', options: { wait_seconds: 60 } },
      pos.credential,
      { signal: abort.signal },
    ).catch(() => 'aborted');
    await until(
      async () => relay.service.feed.size,
      (n) => n > before,
    );
    expect(relay.service.feed.size).toBe(before + 1);
    abort.abort();
    expect(await parked).toBe('aborted');
    const after = await until(
      async () => relay.service.feed.size,
      (n) => n === before,
    );
    expect(after).toBe(before);
    await pos.call('/transaction/confirm', { external_id: 'gone', result_code: 'ABORTED' });
  });
});

describe('confirm', () => {
  it('a failure while PROCESSING commits at once and stops the terminal', async () => {
    const pos = await newPos();
    await pos.call('/transaction/purchase', {
      external_id: 'stop',
      requested_amount: 900,
      currency: 'EUR',
      wait_seconds: 0,
    });
    const failed = await pos.call('/transaction/confirm', {
      external_id: 'stop',
      result_code: 'ABORTED',
      result_description: 'Customer left',
    });
    expect(failed.body.transaction).toMatchObject({
      state: 'COMMITTED',
      result_code: 'ABORTED',
      result_description: 'Customer left',
    });
    const id = failed.body.transaction.id;
    // However far the terminal had got, it does not stay charged.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const outcome = relay.simulators.outcomes(pos.terminalId).get(id);
    expect([undefined, 'STOPPED', 'REVERSED']).toContain(outcome);
    // The terminal's late answer cannot contradict the committed failure.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const read = await pos.call('/transaction/get', { external_id: 'stop' });
    expect(read.body.transaction.state).toBe('COMMITTED');
    expect(read.body.transaction.result_code).toBe('ABORTED');
  });

  it('a CONFIRMED success can be failed within the grace period; the terminal reverses it', async () => {
    const pos = await newPos();
    await pos.call('/transaction/purchase', {
      external_id: 'rev',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    const ok = await pos.call('/transaction/confirm', {
      external_id: 'rev',
      result_code: 'SUCCESS',
    });
    expect(ok.body.transaction.state).toBe('CONFIRMED');
    const failed = await pos.call('/transaction/confirm', {
      external_id: 'rev',
      result_code: 'ABORTED',
    });
    expect(failed.body.transaction.state).toBe('COMMITTED');
    const reversed = await until(
      async () => relay.simulators.outcomes(pos.terminalId).get(failed.body.transaction.id),
      (o) => o === 'REVERSED',
    );
    expect(reversed).toBe('REVERSED');
  });

  it('a CONFIRMED success commits on its own when the grace period ends, then cannot fail', async () => {
    const pos = await newPos();
    await pos.call('/transaction/purchase', {
      external_id: 'grace',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    await pos.call('/transaction/confirm', { external_id: 'grace', result_code: 'SUCCESS' });
    const committed = await until(
      () => pos.call('/transaction/get', { external_id: 'grace' }),
      (r) => r.body.transaction.state === 'COMMITTED',
    );
    expect(committed.body.transaction).toMatchObject({
      state: 'COMMITTED',
      result_code: 'SUCCESS',
    });
    const late = await pos.call('/transaction/confirm', {
      external_id: 'grace',
      result_code: 'ABORTED',
    });
    expect(late.status).toBe(400);
    expect(late.body.error.code).toBe('INVALID_STATE');
    const repeat = await pos.call('/transaction/confirm', {
      external_id: 'grace',
      result_code: 'SUCCESS',
    });
    expect(repeat.status).toBe(200);
  });

  it('a failure for a pair never seen is recorded, and a later create starts nothing', async () => {
    const pos = await newPos();
    const recorded = await pos.call('/transaction/confirm', {
      external_id: 'ghost',
      result_code: 'ABORTED',
    });
    expect(recorded.body.transaction).toMatchObject({
      type: 'UNKNOWN',
      state: 'COMMITTED',
      result_code: 'ABORTED',
    });
    const late = await pos.call('/transaction/purchase', {
      external_id: 'ghost',
      requested_amount: 900,
      currency: 'EUR',
    });
    expect(late.body.transaction.id).toBe(recorded.body.transaction.id);
    expect(late.body.transaction.state).toBe('COMMITTED');
    expect(relay.simulators.outcomes(pos.terminalId).size).toBe(0);
    const status = await pos.call('/terminal/status', {});
    expect(status.body.status.transaction_state).toBe('READY');
  });

  it('success cannot be confirmed for a declined payment', async () => {
    const pos = await newPos();
    const declined = await pos.call('/transaction/purchase', {
      external_id: 'd',
      requested_amount: 100006,
      currency: 'EUR',
    });
    expect(declined.body.transaction.result_code).toBe('DECLINED_BY_ISSUER');
    const wrong = await pos.call('/transaction/confirm', {
      external_id: 'd',
      result_code: 'SUCCESS',
    });
    expect(wrong.body.error.code).toBe('INVALID_STATE');
    const right = await pos.call('/transaction/confirm', {
      external_id: 'd',
      result_code: 'DECLINED_BY_ISSUER',
    });
    expect(right.body.transaction.state).toBe('COMMITTED');
  });
});

describe('pause and continue', () => {
  it('pauses at customer identification, continues with a new amount and merged metadata', async () => {
    const pos = await newPos();
    const paused = await pos.call('/transaction/purchase', {
      external_id: 'p',
      requested_amount: 100021,
      currency: 'EUR',
      metadata: { basket: 1, loyalty: 'none' },
      options: { on_customer_identified: { pause: true } },
    });
    expect(paused.body.transaction.state).toBe('AWAITING_CONTINUE');
    expect(paused.body.transaction.customer_identity).toBeDefined();
    // The terminal's status report follows its transaction report.
    const terminalStatus = await until(
      () => pos.call('/terminal/status', {}),
      (r) => r.body.status.transaction_state === 'AWAITING_CONTINUE',
    );
    expect(terminalStatus.body.status.transaction_state).toBe('AWAITING_CONTINUE');
    const continued = await pos.call('/transaction/continue', {
      external_id: 'p',
      requested_amount: 800,
      metadata: { loyalty: 'gold' },
    });
    expect(continued.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      requested_amount: 800,
      total_amount: 800,
      metadata: { basket: 1, loyalty: 'gold' },
    });
    const again = await pos.call('/transaction/continue', { external_id: 'p' });
    expect(again.body.error.code).toBe('INVALID_STATE');
  });

  it('a pause not continued in time ends AWAITING_CONFIRM with ABORTED', async () => {
    const pos = await newPos();
    await pos.call('/transaction/purchase', {
      external_id: 'late',
      requested_amount: 900,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
    });
    const aborted = await until(
      () => pos.call('/transaction/get', { external_id: 'late' }),
      (r) => r.body.transaction.state === 'AWAITING_CONFIRM',
    );
    expect(aborted.body.transaction.result_code).toBe('ABORTED');
    const tooLate = await pos.call('/transaction/continue', { external_id: 'late' });
    expect(tooLate.body.error.code).toBe('INVALID_STATE');
  });
});

describe('refunds', () => {
  it('refunds a confirmed purchase up to what is left, and get shows what is refundable', async () => {
    const pos = await newPos();
    await pos.call('/transaction/purchase', {
      external_id: 'buy',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    const early = await pos.call('/transaction/refund', {
      external_id: 'early',
      requested_amount: 1,
      currency: 'EUR',
      original_purchase_external_id: 'buy',
    });
    expect(early.body.error.code).toBe('ORIGINAL_PURCHASE_NOT_REFUNDABLE');
    await pos.call('/transaction/confirm', { external_id: 'buy', result_code: 'SUCCESS' });
    const refund = await pos.call('/transaction/refund', {
      external_id: 'ref-1',
      requested_amount: 60_000,
      currency: 'EUR',
      original_purchase_external_id: 'buy',
      original_purchase_terminal_id: pos.terminalId,
    });
    expect(refund.body.transaction).toMatchObject({
      type: 'REFUND',
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      original_purchase_external_id: 'buy',
      customer_not_present: false,
    });
    await pos.call('/transaction/confirm', { external_id: 'ref-1', result_code: 'SUCCESS' });
    const v1 = await pos.call('/transaction/get', {
      external_id: 'buy',
      options: { extra_amounts: true },
    });
    expect(v1.body.transaction.extra_amounts).toEqual({ refundable_amount: INSTANT - 60_000 });
    const plain = await pos.call('/transaction/get', { external_id: 'buy' });
    expect(plain.body.transaction.extra_amounts).toBeUndefined();
    const v0 = await posFor(relay, { terminal_id: pos.terminalId, ...pos.credential }, 'v0').call(
      '/transaction/get',
      { external_id: 'buy' },
    );
    expect(v0.body.transaction.refundable_amount).toBe(INSTANT - 60_000);
    const tooMuch = await pos.call('/transaction/refund', {
      external_id: 'ref-2',
      requested_amount: INSTANT - 60_000 + 1,
      currency: 'EUR',
      original_purchase_external_id: 'buy',
    });
    expect(tooMuch.body.error.code).toBe('REFUND_EXCEEDS_REFUNDABLE');
    const missing = await pos.call('/transaction/refund', {
      external_id: 'ref-3',
      requested_amount: 1,
      currency: 'EUR',
      original_purchase_external_id: 'nope',
    });
    expect(missing.body.error.code).toBe('ORIGINAL_PURCHASE_NOT_FOUND');
  });

  it('an unreferenced, customer-not-present refund runs as a manual entry', async () => {
    const pos = await newPos();
    const refund = await pos.call('/transaction/refund', {
      external_id: 'cnp',
      requested_amount: INSTANT,
      currency: 'EUR',
      customer_not_present: true,
    });
    expect(refund.body.transaction).toMatchObject({ type: 'REFUND', customer_not_present: true });
    expect(refund.body.transaction.payment_method_details.card_entry_mode).toBe('MANUAL');
  });
});

describe('unconfirmed, status and print', () => {
  it('lists unconfirmed transactions until they are confirmed', async () => {
    const pos = await newPos();
    await pos.call('/transaction/purchase', {
      external_id: 'x1',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    const listed = await pos.call('/transaction/unconfirmed', {});
    expect(listed.body.transactions.map((t: { external_id: string }) => t.external_id)).toEqual([
      'x1',
    ]);
    await pos.call('/transaction/confirm', { external_id: 'x1', result_code: 'SUCCESS' });
    expect((await pos.call('/transaction/unconfirmed', {})).body.transactions).toEqual([]);
  });

  it('the terminal status follows the terminal through a payment', async () => {
    const pos = await newPos();
    await pos.call('/transaction/purchase', {
      external_id: 's',
      requested_amount: 900,
      currency: 'EUR',
      wait_seconds: 0,
    });
    const during = await until(
      () => pos.call('/terminal/status', {}),
      (r) => r.body.status.transaction_state === 'PROCESSING',
    );
    expect(during.body.status).toMatchObject({
      connected: true,
      transaction_state: 'PROCESSING',
      battery_percentage: expect.any(Number),
    });
    const afterwards = await until(
      () => pos.call('/terminal/status', {}),
      (r) => r.body.status.transaction_state === 'READY',
    );
    // The screen's wording is the terminal's own (the spec says not to parse it).
    expect(afterwards.body.status.screen_message).toEqual(expect.any(String));
    expect(Date.parse(afterwards.body.status.updated_at)).toBeGreaterThanOrEqual(
      Date.parse(during.body.status.updated_at),
    );
  });

  const png = (width: number, height: number) => {
    const image = new PNG({ width, height });
    image.data.fill(255);
    return PNG.sync.write(image).toString('base64');
  };

  it('queues a PNG, joined across continue fragments, for the printer', async () => {
    const pos = await newPos();
    const whole = png(384, 200);
    const single = await pos.call('/terminal/print', { format: 'PNG', contents: whole });
    expect(single.body).toEqual({ queued: true });
    const cut = Math.floor(whole.length / 3);
    for (const [i, part] of [
      whole.slice(0, cut),
      whole.slice(cut, 2 * cut),
      whole.slice(2 * cut),
    ].entries()) {
      const answer = await pos.call('/terminal/print', {
        format: 'PNG',
        contents: part,
        continue: i < 2,
      });
      expect(answer.status).toBe(200);
    }
    const printed = await until(
      async () => relay.simulators.printed(pos.terminalId),
      (n) => n === 2,
    );
    expect(printed).toBe(2);
  });

  it('refuses contents that are not a PNG, and a terminal without a printer', async () => {
    const pos = await newPos();
    const text = await pos.call('/terminal/print', {
      format: 'PNG',
      contents: Buffer.from('not an image').toString('base64'),
    });
    expect(text.status).toBe(400);
    expect(text.body.error.code).toBe('INVALID_PRINT_DATA');

    const account = (await relay.store.getTerminal(pos.terminalId))!.accountId;
    await relay.store.createTerminal({
      id: 't-noprinter',
      accountId: account,
      kind: 'AGENT',
      capabilities: { printer: false, battery: false },
      status: { terminal_id: 't-noprinter', updated_at: new Date().toISOString() },
      createdAt: new Date().toISOString(),
    });
    await relay.store.putCredential({
      username: 'stationary',
      secretHash: await hashSecret('stationary-secret'),
      accountId: account,
      terminalId: 't-noprinter',
      createdAt: new Date().toISOString(),
    });
    const refused = await post(
      relay.baseUrl,
      'v1',
      '/terminal/print',
      { terminal_id: 't-noprinter', format: 'PNG', contents: png(8, 8) },
      { username: 'stationary', password: 'stationary-secret' },
    );
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('NO_PRINTER');
  });
});
