import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OutboxMirror, type LocalBacklog, type OutboxEntry } from './outbox-mirror.js';

/** The backlog read from every entry, as the mirror kept it before it counted as it goes. */
function backlogOf(entries: OutboxEntry[]): LocalBacklog {
  const amounts = new Map<string, number>();
  let oldestAt: string | undefined;
  for (const { local } of entries) {
    if (!local) continue;
    amounts.set(local.transactionId, local.amount);
    if (oldestAt === undefined || local.at < oldestAt) oldestAt = local.at;
  }
  const total = [...amounts.values()].reduce((sum, amount) => sum + amount, 0);
  return { count: amounts.size, total, ...(oldestAt !== undefined ? { oldestAt } : {}) };
}

const step = fc.oneof(
  fc.record({
    add: fc.constant(true as const),
    local: fc.option(
      fc.record({ transactionId: fc.constantFrom('a', 'b', 'c', 'd'), amount: fc.nat(10_000) }),
      { nil: undefined },
    ),
  }),
  fc.record({ removeOldest: fc.constant(true as const) }),
  fc.record({ removeStatuses: fc.constant(true as const) }),
);

describe('the outbox mirror', () => {
  it('counts the local backlog as entries come and go, as reading them all would', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), fc.nat(5), (steps, initial) => {
        let seq = 0;
        // Written in seq order, at times that grow with it.
        const entry = (local?: { transactionId: string; amount: number }): OutboxEntry => {
          seq++;
          const at = new Date(Date.UTC(2026, 10, 28, 0, 0, seq)).toISOString();
          return {
            seq,
            type: local ? 'transaction' : 'status',
            body: '{}',
            ...(local ? { local: { ...local, at } } : {}),
          };
        };
        const kept = Array.from({ length: initial }, (_, i) =>
          entry({ transactionId: `i${i % 2}`, amount: i }),
        );
        const mirror = new OutboxMirror([...kept]);
        for (const s of steps) {
          if ('add' in s) {
            const e = entry(s.local);
            mirror.add(e);
            kept.push(e);
          } else if ('removeOldest' in s) {
            const oldest = kept.shift();
            if (oldest) expect(mirror.remove(oldest.seq)).toEqual(oldest);
          } else {
            mirror.removeStatuses();
            kept.splice(0, kept.length, ...kept.filter((e) => e.type !== 'status'));
          }
          expect(mirror.localBacklog()).toEqual(backlogOf(kept));
        }
      }),
    );
  });
});
