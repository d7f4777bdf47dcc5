/**
 * The end-of-day scheduler on fake time, with a reader that is busy or free as the test
 * says: when it runs, that it waits for the reader, what it reports and how it retries.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { ManualTimers } from '../common/testing/manual-timers.js';
import type { ZvtSettlement } from '../firmware-bridge/zvt/reader/settlement.js';
import { Settlement } from '../protocol/settlement.js';
import { EndOfDayScheduler } from './end-of-day.js';

const EVENING = Date.parse('2026-11-27T20:00:00.000Z');
const flush = () => new Promise((resolve) => setImmediate(resolve));

function setup(run: () => Promise<ZvtSettlement>, defaultAt = '03:00') {
  const timers = new ManualTimers(EVENING);
  const reports: Settlement[] = [];
  const gate = {
    busy: false,
    claims: 0,
    listeners: new Set<() => void>(),
    claim() {
      if (this.busy) return false;
      this.claims += 1;
      this.busy = true;
      return true;
    },
    release() {
      this.busy = false;
    },
    onChange(listener: () => void) {
      this.listeners.add(listener);
      return () => this.listeners.delete(listener);
    },
    /** A payment ends: the terminal's state changes. */
    free() {
      this.busy = false;
      for (const listener of [...this.listeners]) listener();
    },
  };
  const scheduler = new EndOfDayScheduler({
    run,
    gate,
    report: (settlement) => reports.push(Settlement.parse(settlement)),
    defaultAt,
    dataDir: mkdtempSync(path.join(tmpdir(), 'tps-eod-')),
    clock: timers.clock,
    timers,
    logger: pino({ level: 'silent' }),
    retry: { initialMs: 60_000, maxMs: 3_600_000, random: () => 1 },
  });
  return { timers, reports, gate, scheduler };
}

const closed: ZvtSettlement = { status: 'SUCCESS', total_amount: 1250, currency: 'EUR' };

describe('end-of-day scheduler', () => {
  it('runs at the daily time in the zone given, not before, and again the next day', async () => {
    const { timers, reports, scheduler } = setup(async () => closed);
    scheduler.configure({ at: '03:00', time_zone: 'Europe/Berlin' });
    expect(scheduler.nextRun?.toISOString()).toBe('2026-11-28T02:00:00.000Z');
    timers.advance(6 * 3_600_000 - 1);
    await flush();
    expect(reports).toEqual([]);
    timers.advance(1);
    await flush();
    expect(reports).toMatchObject([{ status: 'SUCCESS', trigger: 'SCHEDULE', attempt: 1 }]);
    timers.advance(24 * 3_600_000);
    await flush();
    expect(reports).toHaveLength(2);
    expect(reports[1]).toMatchObject({ period_start: reports[0]!.finished_at });
    scheduler.stop();
  });

  it('runs none on schedule when off (the native reader’s default)', async () => {
    const { timers, reports, scheduler } = setup(async () => closed, 'off');
    scheduler.configure(undefined);
    expect(scheduler.nextRun).toBeUndefined();
    timers.advance(3 * 86_400_000);
    await flush();
    expect(reports).toEqual([]);
    scheduler.stop();
  });

  it('keeps the default schedule in the host’s zone without Intl (≈ 8 MB of RSS)', () => {
    const { scheduler } = setup(async () => closed);
    const intl = vi.spyOn(Intl, 'DateTimeFormat');
    try {
      scheduler.configure(undefined);
      expect(scheduler.nextRun).toBeInstanceOf(Date);
      expect(intl).not.toHaveBeenCalled();
    } finally {
      intl.mockRestore();
      scheduler.stop();
    }
  });

  it('waits for the payment under way, then runs', async () => {
    let runs = 0;
    const { reports, gate, scheduler } = setup(async () => {
      runs += 1;
      return closed;
    });
    gate.busy = true;
    scheduler.request('TERMINAL_REQUIRED');
    await flush();
    expect(runs).toBe(0);
    gate.free();
    await flush();
    expect(runs).toBe(1);
    expect(gate.busy).toBe(false); // released after it ran
    expect(reports).toMatchObject([{ trigger: 'TERMINAL_REQUIRED' }]);
    scheduler.stop();
  });

  it('reports a failure with a printable reason and tries again after the back-off', async () => {
    let fail = true;
    const { timers, reports, scheduler } = setup(async () => {
      if (fail) throw new Error('line lost\n\u00e9\u0000');
      return closed;
    });
    scheduler.request('ON_DEMAND');
    await flush();
    expect(reports).toMatchObject([
      {
        status: 'FAILED',
        attempt: 1,
        result_code: 'READER_UNAVAILABLE',
        result_description: 'The terminal did not answer the end-of-day: line lost???',
        retry_at: new Date(EVENING + 60_000).toISOString(),
      },
    ]);
    fail = false;
    timers.advance(59_999);
    await flush();
    expect(reports).toHaveLength(1);
    timers.advance(1);
    await flush();
    expect(reports[1]).toMatchObject({ status: 'SUCCESS', attempt: 2, trigger: 'ON_DEMAND' });
    scheduler.stop();
  });

  it('reports the result alone when the details do not fit the schema', async () => {
    const { reports, scheduler } = setup(async () => ({
      ...closed,
      receipt_text: 'no newline at the end',
      totals: [{ card_group: 'VISA', count: 300, amount: 5 }],
    }));
    scheduler.request('ON_DEMAND');
    await flush();
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({ status: 'SUCCESS', trigger: 'ON_DEMAND' });
    expect(reports[0]!.receipt_text).toBeUndefined();
    expect(reports[0]!.totals).toBeUndefined();
    scheduler.stop();
  });
});
