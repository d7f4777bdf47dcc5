import { describe, expect, it } from 'vitest';
import { inWindow } from './updater.js';

describe('maintenance window', () => {
  const at = (hhmm: string) => new Date(`2026-03-01T${hhmm}:00.000Z`);

  it('no window is any time', () => {
    expect(inWindow(undefined, at('13:37'))).toBe(true);
  });

  it('a window within a day includes its start and excludes its end (UTC)', () => {
    const window = { start: '02:00', end: '04:30' };
    expect(['02:00', '03:15', '04:29'].map((t) => inWindow(window, at(t)))).toEqual([
      true,
      true,
      true,
    ]);
    expect(['01:59', '04:30', '12:00'].map((t) => inWindow(window, at(t)))).toEqual([
      false,
      false,
      false,
    ]);
  });

  it('a window whose end is before its start spans midnight', () => {
    const window = { start: '23:00', end: '01:00' };
    expect(['23:00', '23:59', '00:00', '00:59'].every((t) => inWindow(window, at(t)))).toBe(true);
    expect(['01:00', '12:00', '22:59'].some((t) => inWindow(window, at(t)))).toBe(false);
  });
});
