import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ChangeNotice } from '../cluster/change-bus.js';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { ReportInbox, type ReportOutcome } from './inbox.js';
import { ReportOutOfOrder, checkReport, type ReportPosition } from './report-order.js';

const HOLD_MS = 3000;
const JOURNAL = 'journal-a';

/**
 * What the store does with a report: records its position in the same commit as its
 * change, or refuses it. `last` is shared, like the store between relays.
 */
function fakeStore() {
  const last = new Map<string, { journal: string | undefined; seq: number }>();
  const applied: string[] = [];
  return {
    last,
    applied,
    async apply(terminalId: string, report: string, position?: ReportPosition) {
      if (position) {
        const verdict = checkReport(
          last.get(terminalId) ?? { journal: undefined, seq: 0 },
          position,
        );
        if (verdict !== 'apply') throw new ReportOutOfOrder(verdict);
        last.set(terminalId, { journal: position.journal, seq: position.seq });
      }
      applied.push(`${terminalId}:${report}`);
    },
  };
}

type Apply = (terminalId: string, report: string, position?: ReportPosition) => Promise<void>;

function setUp(options: { maxHeld?: number; apply?: Apply } = {}) {
  const timers = new ManualTimers();
  const store = fakeStore();
  const acks: string[] = [];
  const outcomes: ReportOutcome[] = [];
  const remote = new Set<(change: ChangeNotice) => void>();
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
  const inbox = new ReportInbox<string>({
    apply:
      options.apply ??
      ((terminalId, report, position) => store.apply(terminalId, report, position)),
    onRemoteChange: (listener) => {
      remote.add(listener);
      return () => remote.delete(listener);
    },
    logger,
    timers,
    now: () => timers.now,
    holdMs: HOLD_MS,
    onOutcome: (outcome) => outcomes.push(outcome),
    ...(options.maxHeld !== undefined ? { maxHeld: options.maxHeld } : {}),
  });
  /** An ordered report of terminal t-1 (`seq` after `prev`), acknowledged into `acks`. */
  const report = (seq: number, prev?: number, journal = JOURNAL, terminalId = 't-1') =>
    inbox.receive(terminalId, `r${seq}`, {
      position: { journal, seq, ...(prev !== undefined ? { prev } : {}) },
      acknowledge: () => acks.push(`${terminalId}:${seq}`),
    });
  return {
    timers,
    store,
    acks,
    outcomes,
    warnings: () => warnings.map((line) => JSON.parse(line) as Record<string, unknown>),
    inbox,
    report,
    remote: (change: ChangeNotice) => remote.forEach((listener) => listener(change)),
    listeners: () => remote.size,
  };
}

describe('ReportInbox', () => {
  it('applies reports in order, each acknowledged only once it is applied', async () => {
    const t = setUp();
    await t.report(1);
    await t.report(2, 1);
    expect(t.store.applied).toEqual(['t-1:r1', 't-1:r2']);
    expect(t.acks).toEqual(['t-1:1', 't-1:2']);
    expect(t.outcomes).toEqual(['applied', 'applied']);

    let release: () => void = () => {};
    const store = fakeStore();
    const slow = setUp({
      apply: async (terminalId, report, position) => {
        await new Promise<void>((resolve) => (release = resolve));
        await store.apply(terminalId, report, position);
      },
    });
    const first = slow.report(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(slow.acks).toEqual([]);
    release();
    await first;
    expect(slow.acks).toEqual(['t-1:1']);
  });

  it('applies a redelivered report once, and acknowledges it again', async () => {
    const t = setUp();
    await t.report(1);
    await t.report(1);
    expect(t.store.applied).toEqual(['t-1:r1']);
    expect(t.acks).toEqual(['t-1:1', 't-1:1']);
    expect(t.outcomes).toEqual(['applied', 'duplicate']);
  });

  it('acknowledges a report another relay applied, which only the store knows of', async () => {
    const t = setUp();
    t.store.last.set('t-1', { journal: JOURNAL, seq: 5 });
    await t.report(5, 4);
    expect(t.store.applied).toEqual([]);
    expect(t.acks).toEqual(['t-1:5']);
    expect(t.outcomes).toEqual(['duplicate']);
  });

  it('holds reports that came ahead of a missing one, unacknowledged, and applies them in order once it comes', async () => {
    const t = setUp();
    await t.report(1);
    await t.report(4, 3);
    await t.report(3, 2);
    // The terminal's other messages go on meanwhile.
    await t.inbox.receive('t-1', 'presence');
    expect(t.store.applied).toEqual(['t-1:r1', 't-1:presence']);
    expect(t.acks).toEqual(['t-1:1']);
    expect(t.inbox.holding).toBe(2);

    await t.report(2, 1);
    expect(t.store.applied).toEqual(['t-1:r1', 't-1:presence', 't-1:r2', 't-1:r3', 't-1:r4']);
    expect(t.acks).toEqual(['t-1:1', 't-1:2', 't-1:3', 't-1:4']);
    expect(t.inbox.holding).toBe(0);
    expect(t.timers.size).toBe(0);
  });

  it('drops a held report after holdMs, unacknowledged, for the agent to send again', async () => {
    const t = setUp();
    await t.report(2, 1);
    t.timers.advance(HOLD_MS - 1);
    expect(t.inbox.holding).toBe(1);
    t.timers.advance(1);
    expect(t.inbox.holding).toBe(0);
    expect(t.outcomes).toEqual(['gap']);
    expect(t.acks).toEqual([]);
    // Sent again by the agent, after its predecessor: applied then.
    await t.report(1);
    await t.report(2, 1);
    expect(t.acks).toEqual(['t-1:1', 't-1:2']);
  });

  it('warns of dropped reports once every 10 s, with how many went unsaid, as a fleet drops them together', async () => {
    const t = setUp();
    for (let i = 0; i < 500; i++) await t.report(2, 1, JOURNAL, `t-${i}`);
    t.timers.advance(HOLD_MS);
    expect(t.outcomes).toHaveLength(500);
    expect(t.warnings()).toMatchObject([{ terminalId: 't-0', seq: 2, unsaid: 0 }]);
    t.timers.advance(10_000);
    await t.report(2, 1, JOURNAL, 't-500');
    t.timers.advance(HOLD_MS);
    expect(t.warnings()).toHaveLength(2);
    expect(t.warnings()[1]).toMatchObject({ terminalId: 't-500', unsaid: 499 });
  });

  it('holds a re-sent report once, its patience starting again', async () => {
    const t = setUp();
    await t.report(2, 1);
    t.timers.advance(2000);
    await t.report(2, 1);
    expect(t.inbox.holding).toBe(1);
    expect(t.timers.size).toBe(1);
    t.timers.advance(2000);
    expect(t.inbox.holding).toBe(1);
    t.timers.advance(1000);
    expect(t.inbox.holding).toBe(0);
    expect(t.outcomes).toEqual(['gap']);
  });

  it('applies what it holds when another relay applied the missing report', async () => {
    const t = setUp();
    await t.report(2, 1);
    // The predecessor came through another relay, which committed it.
    t.store.last.set('t-1', { journal: JOURNAL, seq: 1 });
    t.remote({ kind: 'report', terminalId: 't-2' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.acks).toEqual([]);
    t.remote({ kind: 'report', terminalId: 't-1' });
    await t.inbox.receive('t-1', 'after the notice');
    expect(t.store.applied).toEqual(['t-1:r2', 't-1:after the notice']);
    expect(t.acks).toEqual(['t-1:2']);
  });

  it('applies a report found out of order when the missing one commits elsewhere while it is being tried', async () => {
    const store = fakeStore();
    let notify: () => void = () => {};
    const t = setUp({
      // The other relay commits report 1, and its notice arrives, after this relay's try
      // of report 2 read the store but before that try answered "gap".
      apply: async (terminalId, report, position) => {
        try {
          await store.apply(terminalId, report, position);
        } finally {
          if (report === 'r2' && !store.last.has('t-1')) {
            store.last.set('t-1', { journal: JOURNAL, seq: 1 });
            notify();
          }
        }
      },
    });
    notify = () => t.remote({ kind: 'report', terminalId: 't-1' });
    await t.report(2, 1);
    await t.inbox.receive('t-1', 'after the notice');
    expect(t.acks).toEqual(['t-1:2']);
    expect(t.inbox.holding).toBe(0);
    expect(t.timers.size).toBe(0);
  });

  it('holds at most maxHeld reports per terminal: one more is dropped at once', async () => {
    const t = setUp({ maxHeld: 2 });
    await t.report(3, 2);
    await t.report(4, 3);
    await t.report(5, 4);
    await t.report(9, 8, JOURNAL, 't-2');
    expect(t.inbox.holding).toBe(3);
    expect(t.outcomes).toEqual(['gap']);
    expect(t.timers.size).toBe(3);
  });

  it('hears an agent reinstalled with an empty journal from seq 1', async () => {
    const t = setUp();
    await t.report(7);
    await t.report(1, undefined, 'journal-b');
    expect(t.store.applied).toEqual(['t-1:r7', 't-1:r1']);
    expect(t.acks).toEqual(['t-1:7', 't-1:1']);
  });

  it("handles one terminal's reports one after another, without holding up other terminals", async () => {
    const order: string[] = [];
    const gates = new Map<string, () => void>();
    const t = setUp({
      apply: async (terminalId, report) => {
        order.push(`start ${terminalId}:${report}`);
        if (report === 'slow') await new Promise<void>((resolve) => gates.set(terminalId, resolve));
        order.push(`end ${terminalId}:${report}`);
      },
    });
    const a1 = t.inbox.receive('t-1', 'slow');
    const a2 = t.inbox.receive('t-1', 'next');
    const b1 = t.inbox.receive('t-2', 'other');
    await b1;
    expect(order).toEqual(['start t-1:slow', 'start t-2:other', 'end t-2:other']);
    gates.get('t-1')!();
    await Promise.all([a1, a2]);
    expect(order.slice(3)).toEqual(['end t-1:slow', 'start t-1:next', 'end t-1:next']);
  });

  it('leaves a report whose application failed unacknowledged, and goes on with the next', async () => {
    const t = setUp({
      apply: async (terminalId, report, position) => {
        if (report === 'r1') throw new Error('store unreachable');
        return fakeStore().apply(terminalId, report, position);
      },
    });
    await expect(t.report(1)).resolves.toBeUndefined();
    await t.report(2);
    expect(t.acks).toEqual(['t-1:2']);
  });

  it('on close, lets go of what it holds and waits for what it is applying', async () => {
    let release: () => void = () => {};
    const store = fakeStore();
    const t = setUp({
      apply: async (terminalId, report, position) => {
        if (report === 'r1') await new Promise<void>((resolve) => (release = resolve));
        await store.apply(terminalId, report, position);
      },
    });
    await t.report(3, 2);
    const applying = t.report(1);
    let closed = false;
    const closing = t.inbox.close().then(() => (closed = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    release();
    await closing;
    expect(store.applied).toEqual(['t-1:r1']);
    await applying;
    await t.report(2, 1);
    expect(store.applied).toEqual(['t-1:r1']);
    expect(t.timers.size).toBe(0);
    expect(t.listeners()).toBe(0);
  });
});
