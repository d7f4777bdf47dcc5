import { describe, expect, it } from 'vitest';
import { secretRedactor } from './redact.js';

const redact = secretRedactor([
  'authorization',
  'password',
  'secret',
  'secret_hash',
  'card_token',
  'par_value',
  'contents',
]);
const line = (value: unknown) => JSON.stringify(value);

describe('secretRedactor', () => {
  it('replaces secret members of every type at any depth, and keeps the line valid JSON', () => {
    const redacted = redact(
      line({
        level: 30,
        password: 'top',
        a: { b: { c: { d: { e: { card_token: 'deep-token', keep: 'me' } } } } },
        list: [{ secret: 'in-array' }, { contents: { nested: ['object', 'value'] } }],
        authorization: 42,
        par_value: null,
        secret_hash: ['x', { y: '}]"' }],
        msg: 'done',
      }) + '\n',
    );
    expect(redacted.endsWith('\n')).toBe(true);
    expect(JSON.parse(redacted)).toEqual({
      level: 30,
      password: '[redacted]',
      a: { b: { c: { d: { e: { card_token: '[redacted]', keep: 'me' } } } } },
      list: [{ secret: '[redacted]' }, { contents: '[redacted]' }],
      authorization: '[redacted]',
      par_value: '[redacted]',
      secret_hash: '[redacted]',
      msg: 'done',
    });
  });

  it('reads strings as JSON does: escapes, and names that only look like secret members', () => {
    const value = {
      note: 'a "password": inside a string stays',
      tricky: 'ends with a backslash \\',
      password: 'with "quotes" and \\ backslashes',
      old_password: 'not a secret field name',
      after: 'kept',
    };
    expect(JSON.parse(redact(line(value)))).toEqual({
      ...value,
      password: '[redacted]',
    });
  });

  it('leaves a line without secrets as it was', () => {
    const text = line({ level: 30, reqId: 'req-1', msg: 'request completed' });
    expect(redact(text)).toBe(text);
  });
});
