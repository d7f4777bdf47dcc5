/**
 * Text from elsewhere (an agent, a reader, the relay) on its way to a person's terminal.
 * A terminal obeys the control characters it is sent: ESC and CSI (0x9B) start sequences
 * that move the cursor, rewrite lines or the title, or write the clipboard (OSC 52); a
 * carriage return overwrites a line; bidi controls reorder what is shown. Such text must
 * be shown, never obeyed (docs/security.md, "Fleet text on the operator's terminal").
 *
 * Which characters: C0 (ESC among them), DEL, C1 (0x80-0x9F), the line and paragraph
 * separators (U+2028/9) and the bidi controls (U+061C, U+200E/F, U+202A-E, U+2066-9).
 * Multi-line text keeps its newlines and tabs, and nothing else of these.
 *
 * They are shown as escapes, `\x1b` (two hex digits up to 0xFF, else `\u202e`): plain
 * ASCII, which any terminal shows and a person can copy into a bug report. A backslash
 * is left as it is, so a text that spells `\x1b` reads as the escape would: it is only
 * ever shown, never parsed back.
 */

const UNSAFE =
  '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';
/** The same, but newline and tab. */
const UNSAFE_IN_LINES = UNSAFE.replace('\\u0000-\\u001f', '\\u0000-\\u0008\\u000b-\\u001f');

/** Matches text without any of these characters (single-line text). */
export const PLAIN_TEXT = new RegExp(`^[^${UNSAFE}]*$`, 'u');
/** Matches text without any of them but newlines and tabs (multi-line text). */
export const MULTILINE_TEXT = new RegExp(`^[^${UNSAFE_IN_LINES}]*$`, 'u');

const UNSAFE_ALL = new RegExp(`[${UNSAFE}]`, 'gu');
const UNSAFE_IN_LINES_ALL = new RegExp(`[${UNSAFE_IN_LINES}]`, 'gu');

const escaped = (char: string): string => {
  const code = char.codePointAt(0)!;
  return code <= 0xff
    ? `\\x${code.toString(16).padStart(2, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
};

/**
 * `text` with every control character shown as an escape (`\x1b`); `multiline` keeps
 * newlines and tabs.
 */
export function printable(text: string, options: { multiline?: boolean } = {}): string {
  return text.replace(options.multiline ? UNSAFE_IN_LINES_ALL : UNSAFE_ALL, escaped);
}

/** JSON.stringify leaves these raw in strings (it escapes only C0, quote and backslash). */
const RAW_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

/**
 * `value` as JSON for a terminal: what JSON.stringify leaves raw (DEL, C1, bidi controls,
 * U+2028/9) written as `\u` escapes, so that a program parses the same value and a
 * terminal obeys nothing. These characters occur only inside strings of JSON, where a
 * `\u` escape is the same character.
 */
export function printableJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(
    RAW_IN_JSON,
    (char) => `\\u${char.codePointAt(0)!.toString(16).padStart(4, '0')}`,
  );
}
