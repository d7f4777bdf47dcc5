import { describe, expect, it } from 'vitest';
import {
  currencyOfNumericCode,
  formatMinorUnits,
  minorUnitDigits,
  numericCurrencyCode,
} from './currencies.js';

describe('the ISO 4217 table', () => {
  it('gives the minor unit ISO gives, where Intl gives cash rounding instead', () => {
    expect(formatMinorUnits(1000, 'HUF')).toBe('HUF 10.00');
    expect(formatMinorUnits(1000, 'IDR')).toBe('IDR 10.00');
    expect(formatMinorUnits(1000, 'COP')).toBe('COP 10.00');
    expect(formatMinorUnits(1000, 'IQD')).toBe('IQD 1.000');
    expect(formatMinorUnits(1000, 'JPY')).toBe('JPY 1000');
    expect(formatMinorUnits(5, 'EUR')).toBe('EUR 0.05');
    expect(formatMinorUnits(-1234, 'EUR')).toBe('EUR -12.34');
    expect(minorUnitDigits('XXQ')).toBe(2);
  });

  it('maps numeric codes both ways', () => {
    expect(numericCurrencyCode('EUR')).toBe(978);
    expect(numericCurrencyCode('HUF')).toBe(348);
    expect(currencyOfNumericCode(978)).toBe('EUR');
    expect(currencyOfNumericCode(36)).toBe('AUD');
    expect(currencyOfNumericCode(999_999)).toBeUndefined();
  });
});
