import { describe, expect, it } from 'vitest';
import { nextLocalTime } from './end-of-day-time.js';

const next = (now: string, at: string, zone?: string) =>
  nextLocalTime(new Date(now), at, zone).toISOString();

describe('the next daily local time', () => {
  it('comes in the zone given, today or tomorrow', () => {
    expect(next('2026-11-27T21:00:00Z', '03:00', 'Europe/Berlin')).toBe('2026-11-28T02:00:00.000Z');
    expect(next('2026-11-27T01:00:00Z', '03:00', 'Europe/Berlin')).toBe('2026-11-27T02:00:00.000Z');
    expect(next('2026-07-01T12:00:00Z', '03:00', 'Europe/Berlin')).toBe('2026-07-02T01:00:00.000Z');
    expect(next('2026-11-27T21:00:00Z', '23:00', 'America/New_York')).toBe(
      '2026-11-28T04:00:00.000Z',
    );
    expect(next('2026-11-27T21:00:00Z', '03:00', 'UTC')).toBe('2026-11-28T03:00:00.000Z');
    expect(next('2026-11-27T10:00:00Z', '00:00', 'Asia/Kolkata')).toBe('2026-11-27T18:30:00.000Z');
  });

  it('is always ahead, by at most a day and an hour, across the changes of the clocks', () => {
    for (const zone of ['Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'UTC']) {
      for (let hour = 0; hour < 24 * 400; hour += 7) {
        const now = new Date(Date.parse('2026-01-01T00:00:00Z') + hour * 3_600_000);
        const at = nextLocalTime(now, '02:30', zone).getTime();
        expect(at).toBeGreaterThan(now.getTime());
        expect(at - now.getTime()).toBeLessThanOrEqual(25 * 3_600_000);
      }
    }
  });

  it('comes in the host’s zone (TZ) when none is named, as when it is named', () => {
    const saved = process.env.TZ;
    try {
      for (const zone of [
        'Europe/Berlin',
        'America/New_York',
        'Australia/Sydney',
        'Asia/Kolkata',
      ]) {
        process.env.TZ = zone;
        expect(next('2026-11-27T21:00:00Z', '03:00')).toBe(
          next('2026-11-27T21:00:00Z', '03:00', zone),
        );
        for (let hour = 0; hour < 24 * 400; hour += 7) {
          const now = new Date(Date.parse('2026-01-01T00:00:00Z') + hour * 3_600_000).toISOString();
          expect(next(now, '02:30'), `${zone} ${now}`).toBe(next(now, '02:30', zone));
        }
      }
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });
});
