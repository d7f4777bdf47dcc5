/**
 * `tps pos` shows what a terminal wrote (receipts, result descriptions, screen messages)
 * without letting it drive the person's terminal: an OSC 52 clipboard write or a cursor
 * move in a receipt comes out as escapes, in text and in --json.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { output } from './cli-options.js';

const HOSTILE = 'Approved\x1b]52;c;cm0gLXJmIH4=\x07\r\x1b[2K\u202eEUR 10.00\nline two\tend';

/** Whether `text` holds a character a terminal would obey rather than show. */
const obeyed = (text: string) => [...text].some((char) => '\x1b\x07\r\u202e'.includes(char));

function written(stream: NodeJS.WriteStream, write: () => void): string {
  let text = '';
  vi.spyOn(stream, 'write').mockImplementation((chunk) => {
    text += String(chunk);
    return true;
  });
  write();
  vi.restoreAllMocks();
  return text;
}

describe('tps pos output', () => {
  afterEach(() => vi.restoreAllMocks());

  it('shows control characters from the terminal as escapes, keeping lines and tabs', () => {
    const text = written(process.stdout, () => output(false).say(HOSTILE));
    expect(text).toBe(
      'Approved\\x1b]52;c;cm0gLXJmIH4=\\x07\\x0d\\x1b[2K\\u202eEUR 10.00\nline two\tend\n',
    );
    expect(obeyed(text)).toBe(false);
  });

  it('does the same on standard error and in --json, which still parses to the same text', () => {
    expect(obeyed(written(process.stderr, () => output(false).note(HOSTILE)))).toBe(false);
    const json = written(process.stdout, () => output(true).json({ receipt: HOSTILE }));
    expect(obeyed(json)).toBe(false);
    expect(JSON.parse(json)).toEqual({ receipt: HOSTILE });
  });
});
