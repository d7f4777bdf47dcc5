import { describe, expect, it } from 'vitest';
import { secretRedactor } from '../common/redact.js';
import { SECRET_FIELDS } from './secrets.js';

describe('SECRET_FIELDS', () => {
  it('are each taken out of a log line, at any depth, and nothing else is', () => {
    const redact = secretRedactor(SECRET_FIELDS);
    for (const field of SECRET_FIELDS) {
      const value = { level: 30, [field]: 'top', nested: { [field]: { deep: 'x' } }, msg: 'm' };
      expect(JSON.parse(redact(JSON.stringify(value)))).toEqual({
        level: 30,
        [field]: '[redacted]',
        nested: { [field]: '[redacted]' },
        msg: 'm',
      });
    }
  });
});
