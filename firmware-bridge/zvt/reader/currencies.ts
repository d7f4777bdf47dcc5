/** ISO 4217 alphabetic → numeric, for the currency of 06 00 / 06 01 (BMP 49). */
export const ISO_4217_NUMERIC: ReadonlyMap<string, number> = new Map([
  ['EUR', 978],
  ['USD', 840],
  ['GBP', 826],
  ['CHF', 756],
  ['SEK', 752],
  ['DKK', 208],
  ['NOK', 578],
  ['PLN', 985],
  ['CZK', 203],
  ['HUF', 348],
]);

export function currencyNumber(alpha: string): number | undefined {
  return ISO_4217_NUMERIC.get(alpha.toUpperCase());
}
