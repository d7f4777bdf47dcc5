/**
 * Text an agent sends that a person will read (fleet facts, reasons, doctor checks, log
 * lines, trace frames): no control characters, which a terminal would obey
 * (common/terminal-text.ts names them and says why). A message with one is refused as
 * invalid, like any other malformed message; the agent shows them as escapes before it
 * sends (common/terminal-text.ts, `printable`).
 */
import { z } from 'zod';
import { MULTILINE_TEXT, PLAIN_TEXT } from '../common/terminal-text.js';

/** One line of text, up to `max` characters, without control characters. */
export const plainText = (max: number) =>
  z.string().max(max).regex(PLAIN_TEXT, 'must not contain control characters');

/** Text of one or more lines: newlines and tabs allowed, no other control character. */
export const multilineText = (max: number) =>
  z
    .string()
    .max(max)
    .regex(MULTILINE_TEXT, 'must not contain control characters but newlines and tabs');
