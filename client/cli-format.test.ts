import { describe, expect, it } from 'vitest';
import { formatAmount, receiptBlock } from './cli-format.js';

describe('formatAmount', () => {
  it('places the decimal point by the currency', () => {
    expect(formatAmount(1000, 'EUR')).toBe('EUR 10.00');
    expect(formatAmount(5, 'EUR')).toBe('EUR 0.05');
    expect(formatAmount(1000, 'JPY')).toBe('JPY 1000');
    expect(formatAmount(1234, 'KWD')).toBe('KWD 1.234');
    // As the receipt shows it: ISO 4217's minor unit, not Intl's cash rounding.
    expect(formatAmount(1000, 'HUF')).toBe('HUF 10.00');
    expect(formatAmount(999_999_999_999, 'USD')).toBe('USD 9999999999.99');
    expect(formatAmount(undefined, 'EUR')).toBe('-');
  });
});

describe('receiptBlock', () => {
  it('frames the receipt text', () => {
    expect(receiptBlock('customer receipt', 'LINE\n')).toBe(
      `-- customer receipt ------------\nLINE\n${'-'.repeat(32)}`,
    );
  });
});
