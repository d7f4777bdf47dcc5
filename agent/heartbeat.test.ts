import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../common/testing/manual-timers.js';
import type { StatusReport } from '../protocol/terminal-link.js';
import { Heartbeat } from './heartbeat.js';
import { ScriptedReader } from './testing/scripted-reader.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('heartbeat', () => {
  it('reports at start, a transaction state at once, other changes within 20 ms, and every period', async () => {
    const sent: StatusReport[] = [];
    const reader = new ScriptedReader();
    reader.readings = { battery_percentage: 80, plugged_in: false, screen_message: 'Ready' };
    const timers = new ManualTimers();
    const heartbeat = new Heartbeat({
      journal: { recordStatus: (report) => (sent.push(report), sent.length) },
      reader,
      clock: { now: () => new Date('2026-03-01T12:00:00.000Z') },
      timers,
      logger: pino({ level: 'silent' }),
      periodMs: 30_000,
      reported: () => {},
    });
    heartbeat.update({ connected: true, transaction_state: 'READY' });
    heartbeat.start();
    await settle();
    expect(sent.map((s) => s.readings)).toEqual([
      { connected: true, transaction_state: 'READY' },
      {
        connected: true,
        transaction_state: 'READY',
        battery_percentage: 80,
        plugged_in: false,
        screen_message: 'Ready',
      },
    ]);

    // A new transaction state goes out in this tick, with what changed beside it.
    heartbeat.update({ transaction_state: 'PROCESSING' });
    reader.emit('progress', { transaction_id: 'tx', screen_text: 'Present card' });
    heartbeat.update({ connected: true }); // no change
    await settle();
    expect(sent).toHaveLength(3);
    expect(sent[2]!.readings).toMatchObject({
      transaction_state: 'PROCESSING',
      screen_message: 'Present card',
    });

    // Other readings wait out a 20 ms window, changes within it in one report.
    reader.emit('progress', { transaction_id: 'tx', screen_text: 'Enter PIN' });
    reader.emit('status', { battery_percentage: 79 });
    await settle();
    expect(sent).toHaveLength(3);
    expect(timers.fireNext()).toBe(true);
    await settle();
    expect(sent).toHaveLength(4);
    expect(sent[3]!.readings).toMatchObject({
      screen_message: 'Enter PIN',
      battery_percentage: 79,
    });

    reader.readings = { battery_percentage: 78 };
    expect(timers.fireNext()).toBe(true); // the period: a heartbeat even if nothing changed
    await settle();
    expect(sent).toHaveLength(5);
    expect(sent[4]!).toEqual({
      type: 'status',
      at: '2026-03-01T12:00:00.000Z',
      readings: expect.objectContaining({
        battery_percentage: 78,
        transaction_state: 'PROCESSING',
      }),
    });
    heartbeat.stop();
    expect(timers.size).toBe(0);
  });
});
