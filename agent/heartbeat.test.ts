import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../firmware-bridge/serial/timers.js';
import type { StatusReport } from '../protocol/terminal-link.js';
import { Heartbeat } from './heartbeat.js';
import { ScriptedReader } from './testing/scripted-reader.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('heartbeat', () => {
  it('reports at start, on every change (once per 20 ms window), and every period', async () => {
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
    // The first beat asks the reader and reports everything, the change before it included.
    expect(sent.map((s) => s.readings)).toEqual([
      {
        connected: true,
        transaction_state: 'READY',
        battery_percentage: 80,
        plugged_in: false,
        screen_message: 'Ready',
      },
    ]);
    expect(timers.fireNext()).toBe(true); // the change's window closes: nothing new
    await settle();
    expect(sent).toHaveLength(1);

    // Changes a few ms apart (a payment's state, then its screen text) make one report.
    heartbeat.update({ transaction_state: 'PROCESSING' });
    reader.emit('progress', { transaction_id: 'tx', screen_text: 'Present card' });
    heartbeat.update({ connected: true }); // no change
    await settle();
    expect(sent).toHaveLength(1);
    expect(timers.fireNext()).toBe(true);
    await settle();
    expect(sent).toHaveLength(2);
    expect(sent[1]!.readings).toMatchObject({
      transaction_state: 'PROCESSING',
      screen_message: 'Present card',
    });

    reader.emit('status', { battery_percentage: 79 });
    expect(timers.fireNext()).toBe(true);
    await settle();
    expect(sent[2]!.readings.battery_percentage).toBe(79);

    reader.readings = { battery_percentage: 78 };
    expect(timers.fireNext()).toBe(true); // the period: a heartbeat even if nothing changed
    await settle();
    expect(sent).toHaveLength(4);
    expect(sent[3]!).toEqual({
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
