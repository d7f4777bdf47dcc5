/**
 * Full card numbers (PANs) in free text: receipt lines, result descriptions, screen
 * messages, reasons, diagnostics. A reader or terminal that prints a number unmasked puts
 * it in whatever text it hands on; this finds such numbers and masks each to its first 6
 * and last 4 digits (PCI DSS), every other digit replaced by `*`, separators and length
 * kept, so a receipt keeps its layout.
 *
 * What counts as a card number: 12-19 digits, the first not 0 (ISO/IEC 7812: 0 is no
 * card issuer's, and zero-padded receipt and trace numbers are common), and of 12 digits
 * only one that starts with 5 or 6 (Maestro's ranges, the only cards issued with 12: a
 * plain 12-digit run is far more often an acquirer's retrieval reference, `YYMMDD` and a
 * sequence, printed on every receipt), passing the Luhn check, either as one run of digits or as groups of at least 3 digits joined by one space,
 * dash or dot each (`4761 7390 0101 0119`, `3782-822463-10005`). Digits glued to more
 * digits are not taken apart: in `54761739001010119` no one can tell where a number
 * starts. Amounts (`12.50`), dates (`2026-11-27`), short ids and any run that fails the
 * Luhn check are left alone; about one in ten digit runs of a card number's length passes
 * it by chance, and is masked too: the price of never letting one through.
 *
 * `*` counts as a digit when the text is cut into groups, so masking never changes where
 * groups begin and end; a stretch holding a `*` is already masked and left alone. That
 * makes masking idempotent, and a number glued to a `*` (`*4761739001010119`) is taken for
 * a masked one.
 *
 * One pass over the text, trying at most a few stretches of at most 19 digits at each
 * group: linear in the text's length, whatever it holds (no regular expression to
 * backtrack).
 */

export const CARD_NUMBER_MIN_DIGITS = 12;
export const CARD_NUMBER_MAX_DIGITS = 19;
/** Each group of a number written in groups has at least this many digits. */
const MIN_GROUP = 3;
const MASK = '*';

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isDigitLike = (c: number) => isDigit(c) || c === 0x2a; // '*'
const isSeparator = (c: number) => c === 0x20 || c === 0x2d || c === 0x2e; // ' ', '-', '.'

/** The Luhn (mod 10) check over a string of digits. */
export function luhnValid(digits: string): boolean {
  return luhnSum(digits, 0, digits.length, 0, false) % 10 === 0;
}

/** Adds the Luhn values of text[start, end) to `sum`, from the right; `double`: the first doubles. */
function luhnSum(text: string, start: number, end: number, sum: number, double: boolean): number {
  for (let i = end - 1; i >= start; i--) {
    let d = text.charCodeAt(i) - 0x30;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum;
}

/** The Luhn check over the digits of groups[first..last], read where they stand. */
function stretchPassesLuhn(text: string, groups: Group[], first: number, last: number): boolean {
  let sum = 0;
  let double = false;
  for (let g = last; g >= first; g--) {
    const { start, end } = groups[g]!;
    sum = luhnSum(text, start, end, sum, double);
    if ((end - start) % 2 === 1) double = !double;
  }
  return sum % 10 === 0;
}

interface Group {
  start: number;
  end: number;
  masked: boolean;
}

/**
 * The text with every card number in it masked to its first 6 and last 4 digits; the same
 * string when it holds none.
 */
export function maskCardNumbers(text: string): string {
  let masked: Uint8Array | undefined;
  const groups: Group[] = [];
  const flush = () => {
    masked = maskRun(text, groups, masked);
    groups.length = 0;
  };
  let i = 0;
  while (i < text.length) {
    if (!isDigitLike(text.charCodeAt(i))) {
      // A lone separator between two groups keeps the run going; anything else ends it.
      const joins =
        groups.length > 0 &&
        groups[groups.length - 1]!.end === i &&
        isSeparator(text.charCodeAt(i)) &&
        i + 1 < text.length &&
        isDigitLike(text.charCodeAt(i + 1));
      if (!joins && groups.length > 0) flush();
      i++;
      continue;
    }
    const start = i;
    let hasMask = false;
    while (i < text.length && isDigitLike(text.charCodeAt(i))) {
      if (text.charCodeAt(i) === 0x2a) hasMask = true;
      i++;
    }
    groups.push({ start, end: i, masked: hasMask });
  }
  if (groups.length > 0) flush();
  if (!masked) return text;
  let out = '';
  let copied = 0;
  for (let p = 0; p < text.length; p++) {
    if (masked[p] !== 1) continue;
    out += text.slice(copied, p) + MASK;
    copied = p + 1;
  }
  return out + text.slice(copied);
}

/**
 * Marks, in `masked` (created on the first need), the digits to hide of every card number
 * in one run of groups: each stretch of whole groups of 12-19 digits is tried.
 */
function maskRun(text: string, groups: Group[], masked: Uint8Array | undefined) {
  for (let first = 0; first < groups.length; first++) {
    let digits = 0;
    for (let last = first; last < groups.length; last++) {
      const group = groups[last]!;
      const size = group.end - group.start;
      digits += size;
      if (digits > CARD_NUMBER_MAX_DIGITS || group.masked) break;
      // In a number written in groups, every group has at least MIN_GROUP digits.
      if (
        last > first &&
        (size < MIN_GROUP || groups[first]!.end - groups[first]!.start < MIN_GROUP)
      )
        break;
      const lead = text.charCodeAt(groups[first]!.start);
      if (digits < CARD_NUMBER_MIN_DIGITS || lead === 0x30) continue;
      // Twelve digits: Maestro's alone (5 or 6 first).
      if (digits === CARD_NUMBER_MIN_DIGITS && lead !== 0x35 && lead !== 0x36) continue;
      if (!stretchPassesLuhn(text, groups, first, last)) continue;
      masked ??= new Uint8Array(text.length);
      let seen = 0;
      for (let g = first; g <= last; g++) {
        for (let p = groups[g]!.start; p < groups[g]!.end; p++, seen++) {
          if (seen >= 6 && seen < digits - 4) masked[p] = 1;
        }
      }
    }
  }
  return masked;
}
