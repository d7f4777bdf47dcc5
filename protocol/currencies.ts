/**
 * The one ISO 4217 table of the project (from the `currency-codes` package, which follows
 * ISO's published list): how many decimals a currency's minor unit has, and its numeric
 * code. The CLI, the emulators and the ZVT driver all read amounts through it, so that
 * "HUF 10.00" on a receipt is "HUF 10.00" in `tps pos` too. (Intl's CLDR data differs from
 * ISO for HUF, IDR, COP and IQD: it gives the cash rounding, not the minor unit.)
 */
import currencyCodes from 'currency-codes';

/** Decimals of the currency's minor unit (ISO 4217); 2 for a code ISO does not list. */
export function minorUnitDigits(currency: string): number {
  return currencyCodes.code(currency)?.digits ?? 2;
}

/** The ISO 4217 numeric code (978 for EUR); undefined for a code ISO does not list. */
export function numericCurrencyCode(currency: string): number | undefined {
  const record = currencyCodes.code(currency);
  return record ? Number(record.number) : undefined;
}

/** The alphabetic code of an ISO 4217 numeric code (978 → EUR). */
export function currencyOfNumericCode(code: number): string | undefined {
  return currencyCodes.number(String(code).padStart(3, '0'))?.code;
}

/** An amount in minor units shown in major units with the currency: `EUR 12.34`, `JPY 1000`. */
export function formatMinorUnits(amount: number, currency: string): string {
  const digits = minorUnitDigits(currency);
  const sign = amount < 0 ? '-' : '';
  const text = String(Math.abs(Math.trunc(amount))).padStart(digits + 1, '0');
  if (digits === 0) return `${currency} ${sign}${text}`;
  return `${currency} ${sign}${text.slice(0, -digits)}.${text.slice(-digits)}`;
}
