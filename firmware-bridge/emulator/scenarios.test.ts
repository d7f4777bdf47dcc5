import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maskCardNumbers } from '../../common/card-numbers.js';
import { Description, ReceiptText, ResultCode } from '../../protocol/fields.js';
import { TransactionReport, TransactionResultDetails } from '../../protocol/terminal-link.js';
import { CustomerIdentity } from '../../protocol/transaction.js';
import {
  MAX_AMOUNT,
  resultCodes,
  scenarioAfterContinue,
  scenarioFor,
  type Scenario,
  type ScenarioCommand,
  type ScenarioContext,
} from './scenarios.js';

const NOW = new Date('2025-03-07T09:04:05.678Z');
const ctx = (over: Partial<ScenarioContext> = {}): ScenarioContext => ({
  terminalSerial: 1912345678,
  sequence: 42,
  now: NOW,
  ...over,
});
const cmd = (over: Partial<ScenarioCommand> = {}): ScenarioCommand => ({
  kind: 'PURCHASE',
  requested_amount: 1234,
  currency: 'EUR',
  pause_on_customer_identified: false,
  ...over,
});
const run = (over: Partial<ScenarioCommand> = {}, context = ctx()) =>
  scenarioFor(cmd(over), context);

const TRIGGERS = Array.from({ length: 21 }, (_, i) => 100001 + i);
const PLAIN_AMOUNTS = [0, 1, 1234, 100000, 100022, 999999, MAX_AMOUNT];
const CURRENCIES = ['EUR', 'USD', 'JPY', 'KWD', 'SEK'];
const KINDS = ['PURCHASE', 'REFUND', 'ACCOUNT_CHECK'] as const;
const ERRORS: Record<number, string> = {
  100003: 'PROCESSOR_REJECTED',
  100004: 'ABORTED',
  100005: 'CARD_REMOVED',
  100006: 'DECLINED_BY_ISSUER',
  100007: 'SYSTEM_ERROR',
  100008: 'NETWORK_ERROR',
  100009: 'CARD_NOT_ACCEPTED',
};

/** Everything a scenario carries must be something the terminal link accepts. */
function expectValid(scenario: Scenario) {
  expect(TransactionResultDetails.safeParse(scenario.details).error).toBeUndefined();
  const report = { type: 'transaction', transaction_id: 'txn-1', phase: 'COMPLETED' };
  const { result_code, result_description, details } = scenario;
  expect(
    TransactionReport.safeParse({ ...report, result_code, result_description, details }).error,
  ).toBeUndefined();
  expect(ResultCode.safeParse(result_code).success).toBe(true);
  if (result_description !== undefined) expect(Description.parse(result_description)).toBeTruthy();
  if (scenario.customerIdentity)
    expect(CustomerIdentity.parse(scenario.customerIdentity)).toBeTruthy();
  const pm = details.payment_method_details;
  if (result_code === 'SUCCESS' && pm) expect(pm.card_scheme).not.toBe('UNKNOWN');
  for (const total of [details.total_amount, details.authorized_amount]) {
    if (total !== undefined) expect(total).toBeLessThanOrEqual(MAX_AMOUNT);
  }
}

describe('every scenario validates against the protocol', () => {
  it.each(KINDS)('all trigger and plain amounts, currencies and options: %s', (kind) => {
    for (const requested_amount of [...TRIGGERS, ...PLAIN_AMOUNTS]) {
      for (const currency of CURRENCIES) {
        for (const pause_on_customer_identified of [false, true]) {
          for (const customer_not_present of [undefined, true]) {
            const command = { kind, requested_amount, currency, pause_on_customer_identified };
            const full = { ...command, customer_not_present, cashback_amount: 500 };
            expectValid(scenarioFor(cmd(full), ctx()));
            expectValid(scenarioAfterContinue(cmd(full), ctx(), MAX_AMOUNT));
            expectValid(scenarioAfterContinue(cmd(full), ctx(), 0));
          }
        }
      }
    }
  });

  it('odd contexts still give valid identifiers', () => {
    for (const context of [
      { terminalSerial: 0, sequence: 0, now: new Date(0) },
      { terminalSerial: 1e21, sequence: 123_456_789, now: new Date('9999-12-31T23:59:59Z') },
      { terminalSerial: -5.5, sequence: Number.NaN, now: new Date(Number.NaN) },
    ]) {
      for (const amount of [100001, 100014, 100019, 100021]) {
        expectValid(run({ requested_amount: amount, pause_on_customer_identified: true }, context));
      }
    }
  });

  it('is pure: equal inputs give equal scenarios', () => {
    expect(run({ requested_amount: 100019 })).toEqual(run({ requested_amount: 100019 }));
  });
});

describe('trigger amounts', () => {
  it('picks the delay', () => {
    expect(run({ requested_amount: 100001 }).delay).toEqual({ kind: 'fixed', ms: 2000 });
    expect(run({ requested_amount: 100002 }).delay).toEqual({ kind: 'instant' });
    expect(run({ requested_amount: 100020 }).delay).toEqual({ kind: 'fixed', ms: 30000 });
    for (const amount of [100003, 100010, 100021, 1234, 0]) {
      expect(run({ requested_amount: amount }).delay).toEqual({ kind: 'normal' });
    }
  });

  it.each(Object.entries(ERRORS))('%s fails with %s and charges nothing', (amount, code) => {
    for (const kind of KINDS) {
      const scenario = run({ kind, requested_amount: Number(amount), cashback_amount: 100 });
      const { details } = scenario;
      expect(scenario.result_code).toBe(code);
      expect(scenario.result_description).toMatch(/^[\x20-\x7e]+$/);
      expect(details.authorized_amount ?? 0).toBe(0);
      for (const key of ['total_amount', 'tip_amount', 'surcharge_amount', 'cashback_amount']) {
        expect(details).not.toHaveProperty(key);
      }
      expect(details.payment_method_details?.authorization_code).toBeUndefined();
      expect(details.receipt_details_customer).toContain('FAILED');
      expect(details.receipt_details_merchant).toContain('FAILED');
      expect(details.receipt_details_customer).not.toContain('APPROVED');
    }
  });

  it('reports the card where one was read', () => {
    const cardOf = (amount: number, pause = false) =>
      run({ requested_amount: amount, pause_on_customer_identified: pause }).details
        .payment_method_details;
    for (const amount of [100003, 100005, 100006, 100008, 100009]) {
      expect(cardOf(amount)?.card_number_customer).toMatch(/^\*{12}\d{4}$/);
    }
    expect(cardOf(100004)).toBeUndefined();
    expect(cardOf(100007)).toBeUndefined();
    expect(cardOf(100004, true)?.payment_method).toBe('CARD');
    expect(cardOf(100006)?.authorization_response_code).toBe('05');
  });

  it.each([
    [100010, 'CONTACTLESS_EMV', 'PIN'],
    [100011, 'CONTACTLESS_EMV', 'CONSUMER_DEVICE'],
    [100012, 'CONTACT_EMV', 'NONE'],
    [100013, 'CONTACT_EMV', 'PIN'],
    [100014, 'MAGNETIC_STRIPE', 'SIGNATURE'],
    [100015, 'MAGNETIC_STRIPE', 'PIN'],
    [100016, 'CONTACT_EMV', 'PIN'],
  ])('%s succeeds with %s and %s', (amount, entry, verification) => {
    const scenario = run({ requested_amount: amount });
    const pm = scenario.details.payment_method_details;
    expect(scenario.result_code).toBe('SUCCESS');
    expect(pm?.card_entry_mode).toBe(entry);
    expect(pm?.cardholder_verification).toBe(verification);
    expect(scenario.details.authorized_amount).toBe(amount);
  });

  it('100016 uses another card application than 100013', () => {
    const of = (amount: number) => run({ requested_amount: amount }).details.payment_method_details;
    expect(of(100016)?.application_identifier).not.toBe(of(100013)?.application_identifier);
    expect(of(100016)?.card_scheme).not.toBe(of(100013)?.card_scheme);
  });

  it('100017 adds a 10 % tip, 100018 a 1.5 % surcharge, within the amount limit', () => {
    const continued = (trigger: number, amount: number) =>
      scenarioAfterContinue(cmd({ requested_amount: trigger }), ctx(), amount).details;
    for (const amount of [1, 5, 15, 25, 1999, 100017, 123_456_789_012]) {
      const tip = continued(100017, amount);
      expect(Math.abs((tip.tip_amount ?? -1) - amount * 0.1)).toBeLessThanOrEqual(0.5);
      expect(tip.total_amount).toBe(amount + (tip.tip_amount ?? 0));
      expect(tip.authorized_amount).toBe(tip.total_amount);
      const surcharge = continued(100018, amount);
      expect(Math.abs((surcharge.surcharge_amount ?? -1) - amount * 0.015)).toBeLessThanOrEqual(
        0.5,
      );
      expect(surcharge.total_amount).toBe(amount + (surcharge.surcharge_amount ?? 0));
    }
    expect(continued(100017, MAX_AMOUNT - 1000).total_amount).toBe(MAX_AMOUNT);
    expect(continued(100018, MAX_AMOUNT).total_amount).toBe(MAX_AMOUNT);
    expect(run({ requested_amount: 100017 }).details.tip_amount).toBe(10002);
    expect(run({ requested_amount: 100018 }).details.surcharge_amount).toBe(1500);
  });

  it('100019 converts the currency with consistent rates', () => {
    for (const [currency, expected] of [
      ['EUR', 'USD'],
      ['USD', 'EUR'],
      ['JPY', 'USD'],
    ]) {
      const { details } = run({ requested_amount: 100019, currency, cashback_amount: 1 });
      const dcc = details.dcc!;
      expect(dcc.customer_currency).toBe(expected);
      expect(Math.abs(dcc.exchange_rate! * 100 - dcc.exchange_rate_precise!)).toBeLessThanOrEqual(
        50,
      );
      const scale = currency === 'JPY' ? 100 : 1;
      const exact = (details.total_amount! * dcc.exchange_rate_precise! * scale) / 1e6;
      expect(Math.abs(dcc.customer_amount! - exact)).toBeLessThanOrEqual(0.5);
      expect(dcc.exchange_rate_date).toBe('2025-03-07');
      expect(dcc.markup_fee).toBeGreaterThan(0);
      expect(dcc.provider && dcc.exchange_rate_provider).toBeTruthy();
    }
    expect(run({ requested_amount: 1234 }).details.dcc).toBeUndefined();
  });

  it('100021 reports a customer identity; a pause reports one for any amount', () => {
    const identified = run({ requested_amount: 100021 });
    expect(identified.pause).toBe(false);
    expect(CustomerIdentity.parse(identified.details.customer_identity)).toMatchObject({
      par: expect.anything(),
      tokenprovider_a: expect.anything(),
      tokenprovider_b: expect.anything(),
    });
    expect(run().customerIdentity).toBeUndefined();
    expect(run().details.customer_identity).toBeUndefined();
    const paused = run({ pause_on_customer_identified: true });
    expect(paused.pause).toBe(true);
    expect(paused.customerIdentity).toEqual(paused.details.customer_identity);
    expect(paused.customerIdentity?.par?.par_value).toHaveLength(29);
  });
});

describe('continue', () => {
  it('keeps the outcome of the start amount, takes the new amount, never pauses again', () => {
    const start = cmd({ requested_amount: 100006, pause_on_customer_identified: true });
    const declined = scenarioAfterContinue(start, ctx(), 5000);
    expect([declined.result_code, declined.pause]).toEqual(['DECLINED_BY_ISSUER', false]);
    const plain = scenarioAfterContinue(cmd({ pause_on_customer_identified: true }), ctx(), 777);
    expect(plain.details).toMatchObject({ authorized_amount: 777, total_amount: 777 });
    expect(plain.customerIdentity).toBeDefined();
    expect(scenarioAfterContinue(cmd(), ctx())).toEqual({ ...run(), pause: false });
  });
});

describe('success details', () => {
  it('fills the payment method details', () => {
    const { details } = run({ cashback_amount: 500 });
    expect(details).toMatchObject({ authorized_amount: 1734, total_amount: 1734 });
    expect(details.cashback_amount).toBe(500);
    expect(details.payment_method_details).toMatchObject({
      payment_method: 'CARD',
      acquirer_reference: '250307000042',
      acquirer_timestamp: '250307090405',
      authorization_response_code: '00',
      card_number_customer: expect.stringMatching(/^\*{12}\d{4}$/),
      card_number_merchant: expect.stringMatching(/^\d{6}\*{6}\d{4}$/),
      authorization_code: expect.stringMatching(/^[0-9A-Z]{6}$/),
      application_identifier: expect.stringMatching(/^A0/),
      card_sequence_number: expect.stringMatching(/^\d\d$/),
    });
    expect(details.reference).toMatch(/^[0-9-]+$/);
  });

  it('gives distinct references and identifiers per sequence and terminal', () => {
    const of = (context: ScenarioContext) => run({}, context).details;
    const refs = new Set([1, 2, 3, 1_000_001].map((sequence) => of(ctx({ sequence })).reference));
    expect(refs.size).toBe(4);
    const acquirerRefs = [1, 2].map(
      (sequence) => of(ctx({ sequence })).payment_method_details?.acquirer_reference,
    );
    expect(new Set(acquirerRefs).size).toBe(2);
    const [a, b] = [1, 2].map((terminalSerial) => of(ctx({ terminalSerial })));
    expect(a?.reference).not.toBe(b?.reference);
    expect(a?.payment_method_details?.acquirer_terminal_id).not.toBe(
      b?.payment_method_details?.acquirer_terminal_id,
    );
  });

  it('refunds the requested amount; a customer-not-present refund is keyed in', () => {
    const refund = run({ kind: 'REFUND', requested_amount: 100017, cashback_amount: 50 });
    expect(refund.details).toMatchObject({ authorized_amount: 100017, total_amount: 100017 });
    expect(refund.details.tip_amount).toBeUndefined();
    expect(refund.details.receipt_details_customer).toContain('REFUND');
    const keyed = run({ kind: 'REFUND', customer_not_present: true });
    expect(keyed.details.payment_method_details?.card_entry_mode).toBe('MANUAL');
  });

  it('an account check succeeds for 0', () => {
    const check = run({ kind: 'ACCOUNT_CHECK', requested_amount: 0 });
    expect(check.result_code).toBe('SUCCESS');
    expect(check.details).toMatchObject({ authorized_amount: 0, total_amount: 0 });
  });
});

describe('receipts', () => {
  it('show amount, card, scheme, entry, auth code, reference, date and result', () => {
    const { details } = run({ requested_amount: 100014 });
    const pm = details.payment_method_details!;
    for (const receipt of [details.receipt_details_customer, details.receipt_details_merchant]) {
      for (const text of ['EUR 1000.14', 'VISA', 'MAGSTRIPE', pm.authorization_code!, 'APPROVED']) {
        expect(receipt).toContain(text);
      }
      expect(receipt).toContain(details.reference);
      expect(receipt).toContain('2025-03-07');
    }
    expect(details.receipt_details_customer).toContain(pm.card_number_customer);
    expect(details.receipt_details_merchant).toContain(pm.card_number_merchant);
    expect(details.receipt_details_merchant).toContain('SIGNATURE');
  });

  it('hold nothing the card-number guard would mask, whatever the terminal, sequence and day to 2049', () => {
    // The relay and agent mask what reads as a card number in receipts and warn of it; an
    // emulator whose reference read as one set off that warning for some terminals.
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e15 - 1 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        // To 2049: from 2050 a 12-digit acquirer reference (YYMMDD…, the spec's) starts with 5
        // as a Maestro number may, and one in ten will be masked.
        fc.date({ min: new Date('2000-01-01'), max: new Date('2049-12-31'), noInvalidDate: true }),
        fc.constantFrom(...TRIGGERS, ...PLAIN_AMOUNTS),
        (terminalSerial, sequence, now, requested_amount) => {
          const { details } = run({ requested_amount }, ctx({ terminalSerial, sequence, now }));
          for (const receipt of [
            details.receipt_details_customer,
            details.receipt_details_merchant,
          ])
            if (receipt !== undefined) expect(maskCardNumbers(receipt)).toBe(receipt);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('format minor units per currency', () => {
    const receipt = (currency: string) => run({ currency }).details.receipt_details_customer;
    expect(receipt('JPY')).toContain('JPY 1234');
    expect(receipt('KWD')).toContain('KWD 1.234');
    expect(run({ requested_amount: 5 }).details.receipt_details_customer).toContain('EUR 0.05');
  });

  it('stay within the line limits for the largest cases', () => {
    for (const amount of [100014, 100019, MAX_AMOUNT]) {
      const { details } = run(
        { requested_amount: amount, cashback_amount: MAX_AMOUNT },
        ctx({ terminalSerial: 1e15 - 1, sequence: 1e15 - 1 }),
      );
      for (const text of [details.receipt_details_customer!, details.receipt_details_merchant!]) {
        ReceiptText.parse(text);
        const lines = text.split('\n').slice(0, -1);
        expect(lines.length).toBeLessThanOrEqual(31);
        expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(32);
      }
    }
  });
});

describe('result codes', () => {
  it('are valid, unique, produced by the triggers and documented', () => {
    const codes = resultCodes.map((entry) => entry.code);
    expect(new Set(codes).size).toBe(codes.length);
    codes.forEach((code) => ResultCode.parse(code));
    const produced = new Set(
      TRIGGERS.map((amount) => run({ requested_amount: amount }).result_code),
    );
    expect([...produced].sort()).toEqual([...codes].sort());
    const docs = readFileSync(new URL('../../docs/simulator.md', import.meta.url), 'utf8');
    for (const code of codes) expect(docs).toContain(`\`${code}\``);
    for (const amount of TRIGGERS) expect(docs).toContain(String(amount));
  });
});
