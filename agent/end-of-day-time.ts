/**
 * The next moment a daily local time (`HH:MM`) comes in an IANA time zone, or in the host's
 * (its TZ), with the platform's time zone data: the end-of-day schedule (docs/zvt.md,
 * "End-of-day"). A local time that does not exist that day (the hour skipped when clocks go
 * forward) comes within an hour of it; one that exists twice (clocks going back) comes once.
 */

/** The zone's offset from UTC at `at`, in ms (positive east of Greenwich); undefined: the host's. */
function offsetMs(at: number, timeZone: string | undefined): number {
  // Date reads the host's zone from the same data; Intl's formatter would first load its
  // locale data, ≈ 8 MB of the idle agent's RSS for a ZVT terminal's default schedule.
  if (timeZone === undefined) return -new Date(at).getTimezoneOffset() * 60_000;
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(new Date(at));
  const field = (type: string) => Number(parts.find((part) => part.type === type)?.value);
  const local = Date.UTC(
    field('year'),
    field('month') - 1,
    field('day'),
    field('hour'),
    field('minute'),
    field('second'),
  );
  return local - (at - (at % 1000));
}

/** The instant a local wall-clock time is in the zone (once, when it is there twice). */
function instantOf(localAsUtc: number, timeZone: string | undefined): number {
  const first = localAsUtc - offsetMs(localAsUtc, timeZone);
  const second = localAsUtc - offsetMs(first, timeZone);
  return Math.min(first, second);
}

/** The first instant after `now` whose local time in `timeZone` (else the host's) is `at` (HH:MM). */
export function nextLocalTime(now: Date, at: string, timeZone?: string): Date {
  const [hours, minutes] = at.split(':').map(Number) as [number, number];
  const localNow = new Date(now.getTime() + offsetMs(now.getTime(), timeZone));
  for (let day = 0; day < 3; day += 1) {
    const candidate = instantOf(
      Date.UTC(
        localNow.getUTCFullYear(),
        localNow.getUTCMonth(),
        localNow.getUTCDate() + day,
        hours,
        minutes,
      ),
      timeZone,
    );
    if (candidate > now.getTime()) return new Date(candidate);
  }
  // Unreachable for real zones (a day later is always later); a day from now otherwise.
  return new Date(now.getTime() + 86_400_000);
}
