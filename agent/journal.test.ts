import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TerminalReport } from '../protocol/terminal-link.js';
import { Journal, type TransactionRow } from './journal.js';

const dir = () => mkdtempSync(path.join(tmpdir(), 'agent-journal-'));
/** The outbox as the file holds it, read through a handle of its own. */
const outboxInFile = (where: string): Array<{ seq: number; body: string }> => {
  const db = new DatabaseSync(path.join(where, 'agent.sqlite'), { readOnly: true });
  try {
    return db.prepare('SELECT seq, body FROM outbox ORDER BY seq').all() as Array<{
      seq: number;
      body: string;
    }>;
  } finally {
    db.close();
  }
};
const seqsInFile = (where: string) => outboxInFile(where).map((row) => row.seq);
const status = (message: string): TerminalReport & { type: 'status' } => ({
  type: 'status',
  at: '2026-01-01T00:00:00.000Z',
  readings: { screen_message: message },
});
const done = (id: string): TerminalReport => ({
  type: 'transaction',
  transaction_id: id,
  phase: 'COMPLETED',
  result_code: 'SUCCESS',
});
const row = (
  id: string,
  state: TransactionRow['state'],
  extra: Partial<TransactionRow> = {},
): TransactionRow => ({
  transaction_id: id,
  state,
  cancel_requested: false,
  continue_requested: false,
  created_at: '2026-01-01T00:00:00.000Z',
  updated_at: '2026-01-01T00:00:00.000Z',
  ...extra,
});

describe('agent journal', () => {
  it('numbers reports with a seq that keeps growing across restarts and deletions', () => {
    const where = dir();
    const journal = Journal.open(where);
    expect(journal.record({ reports: [done('a'), done('b')] })).toEqual([1, 2]);
    journal.dropReport(1);
    journal.dropReport(2);
    journal.close();
    const reopened = Journal.open(where);
    expect(reopened.lastSeq()).toBe(2);
    expect(reopened.record({ reports: [done('c')] })).toEqual([3]);
    expect(reopened.pendingReports()).toEqual([{ seq: 3, report: done('c') }]);
    reopened.close();
  });

  it('keeps each settlement report in order, in the schema an older release opens', () => {
    const where = dir();
    const journal = Journal.open(where);
    const settlement: TerminalReport = {
      type: 'settlement',
      settlement: {
        status: 'SUCCESS',
        trigger: 'SCHEDULE',
        attempt: 1,
        started_at: '2026-01-01T02:00:00.000Z',
        finished_at: '2026-01-01T02:00:01.000Z',
      },
    };
    expect(journal.record({ reports: [done('a'), settlement] })).toEqual([1, 2]);
    journal.recordStatus(status('Ready'));
    journal.record({ reports: [settlement] });
    journal.recordStatus(status('Busy'));
    journal.close();
    const db = new DatabaseSync(path.join(where, 'agent.sqlite'), { readOnly: true });
    expect(db.prepare('PRAGMA user_version').get()).toEqual({ user_version: 2 });
    db.close();
    expect(
      Journal.open(where)
        .pendingReports()
        .map((r) => r.report),
    ).toEqual([done('a'), settlement, settlement, status('Busy')]);
  });

  it('has an identity that survives restarts; a new journal has another', () => {
    const where = dir();
    const id = Journal.open(where).id;
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(Journal.open(where).id).toBe(id);
    expect(Journal.open(dir()).id).not.toBe(id);
  });

  it('keeps one row per command_id: a second insert fails the whole commit', () => {
    const journal = Journal.open(dir());
    const command = { command_id: 'c1', type: 'print', outcome: 'ACCEPTED' as const, body: {} };
    journal.record({ command });
    expect(() => journal.record({ command, reports: [done('a')] })).toThrow(/UNIQUE/);
    expect(journal.pendingReports()).toEqual([]);
    expect(journal.command('c1')).toEqual({ command_id: 'c1', type: 'print', outcome: 'ACCEPTED' });
  });

  it('keeps only the newest status, in order behind the transaction reports', () => {
    const journal = Journal.open(dir());
    journal.recordStatus(status('one'));
    journal.record({ reports: [done('a')] });
    journal.recordStatus(status('two'));
    journal.recordStatus(status('three'));
    expect(journal.pendingReports().map((r) => r.seq)).toEqual([2, 4]);
    expect(journal.pendingReports(2)).toEqual([{ seq: 4, report: status('three') }]);
    // As stored, for the link to send without parsing them: the same reports.
    expect(
      journal.pendingReportTexts().map((r) => ({ seq: r.seq, report: JSON.parse(r.body) })),
    ).toEqual(journal.pendingReports());
  });

  it('keeps what it recorded in its file with the hosted simulators’ cheaper durability', () => {
    const at = dir();
    const journal = Journal.open(at, undefined, 'process-crash');
    journal.record({ transaction: row('t1', 'RUNNING'), reports: [done('t1')] });
    journal.close();
    // A terminal's agent can take over the file (a simulator's journal is an agent's).
    const reopened = Journal.open(at);
    expect(reopened.transaction('t1')?.state).toBe('RUNNING');
    expect(reopened.pendingReports().map((r) => r.report)).toEqual([done('t1')]);
  });

  it('lists open transactions and owed reversals, and prunes only final ones', () => {
    const journal = Journal.open(dir());
    const success = { result_code: 'SUCCESS' };
    journal.record({ transaction: row('queued', 'QUEUED') });
    journal.record({
      transaction: row('paused', 'PAUSED', { continue_amount: 5, continue_requested: true }),
    });
    journal.record({
      transaction: row('owed', 'COMPLETED', { cancel_requested: true, result: success }),
    });
    journal.record({ transaction: row('done', 'COMPLETED', { result: success }) });
    expect(journal.openTransactions().map((r) => r.transaction_id)).toEqual([
      'queued',
      'paused',
      'owed',
    ]);
    expect(journal.transaction('paused')).toEqual(
      row('paused', 'PAUSED', { continue_amount: 5, continue_requested: true }),
    );
    journal.prune(new Date('2027-01-01T00:00:00.000Z'));
    expect(journal.transaction('done')).toBeUndefined();
    expect(journal.openTransactions()).toHaveLength(3);
  });
});

describe('agent journal: acknowledged reports', () => {
  const commits: Array<[string, (journal: Journal) => void]> = [
    ['record', (journal) => journal.record({ transaction: row('t9', 'QUEUED') })],
    ['recordStatus', (journal) => journal.recordStatus(status('later'))],
    ['prune', (journal) => journal.prune(new Date('2026-01-01T00:00:00.000Z'))],
    ['commitDrops', (journal) => journal.commitDrops()],
  ];

  it.each(commits)(
    'leave the outbox at once, and the file with the next commit: %s',
    (_, commit) => {
      const where = dir();
      const journal = Journal.open(where);
      journal.record({ reports: [done('a'), done('b'), done('c')] });
      expect(journal.dropReport(2)).toBe(true);
      expect(journal.dropReport(2)).toBe(false);
      expect(journal.pendingReports().map((r) => r.seq)).toEqual([1, 3]);
      expect(journal.previousReport(3)).toBe(1);
      expect(seqsInFile(where)).toEqual([1, 2, 3]);
      commit(journal);
      expect(seqsInFile(where)).not.toContain(2);
      expect(journal.pendingReports().map((r) => r.seq)).toEqual(seqsInFile(where));
      journal.close();
    },
  );

  it('come back after a crash before the next commit, to be published again; not after close', () => {
    const where = dir();
    const crashed = Journal.open(where);
    crashed.record({ reports: [done('a'), done('b')] });
    crashed.dropReport(1);
    // Abandoned, not closed: as after a crash, the drop's delete was never committed.
    const restarted = Journal.open(where);
    expect(restarted.pendingReports()).toEqual([
      { seq: 1, report: done('a') },
      { seq: 2, report: done('b') },
    ]);
    restarted.dropReport(1);
    restarted.close();
    expect(Journal.open(where).pendingReports()).toEqual([{ seq: 2, report: done('b') }]);
  });

  it('stay owed when a commit fails, and the outbox stays as it was', () => {
    const where = dir();
    const journal = Journal.open(where);
    const command = { command_id: 'c1', type: 'print', outcome: 'ACCEPTED' as const, body: {} };
    journal.record({ command, reports: [done('a'), done('b')] });
    journal.dropReport(1);
    expect(() => journal.record({ command, reports: [done('c')] })).toThrow(/UNIQUE/);
    expect(journal.pendingReports()).toEqual([{ seq: 2, report: done('b') }]);
    expect(journal.previousReport(3)).toBe(2);
    expect(seqsInFile(where)).toEqual([1, 2]);
    journal.commitDrops();
    expect(seqsInFile(where)).toEqual([2]);
    journal.close();
  });

  type Step =
    | { op: 'record'; reports: TerminalReport[]; command: string | null }
    | { op: 'recordStatus'; report: TerminalReport & { type: 'status' } }
    | { op: 'drop'; pending: boolean; pick: number }
    | { op: 'commitDrops' }
    | { op: 'reopen' };
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({
      op: fc.constant('record' as const),
      reports: fc.array(
        fc.oneof(fc.string({ maxLength: 4 }).map(done), fc.string({ maxLength: 4 }).map(status)),
        { maxLength: 3 },
      ),
      // Few command ids: some records fail as duplicates.
      command: fc.option(fc.constantFrom('c1', 'c2', 'c3', 'c4', 'c5')),
    }),
    fc.record({
      op: fc.constant('recordStatus' as const),
      report: fc.string({ maxLength: 4 }).map(status),
    }),
    {
      arbitrary: fc.record({
        op: fc.constant('drop' as const),
        pending: fc.boolean(),
        pick: fc.nat(20),
      }),
      weight: 2,
    },
    fc.constant({ op: 'commitDrops' as const }),
    fc.constant({ op: 'reopen' as const }),
  );

  it('answer as the file does, less the drops still owed, whatever the order of calls', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 25 }), (steps) => {
        const where = dir();
        let journal = Journal.open(where);
        /** Dropped, and their delete not yet committed as far as the test knows. */
        const owed = new Set<number>();
        const commands = new Set<string>();
        try {
          for (const s of steps) {
            const before = outboxInFile(where).filter((r) => !owed.has(r.seq));
            switch (s.op) {
              case 'record': {
                const entry = {
                  reports: s.reports,
                  ...(s.command === null
                    ? {}
                    : {
                        command: {
                          command_id: s.command,
                          type: 'print',
                          outcome: 'ACCEPTED' as const,
                          body: {},
                        },
                      }),
                };
                if (s.command !== null && commands.has(s.command)) {
                  expect(() => journal.record(entry)).toThrow(/UNIQUE/);
                } else {
                  journal.record(entry);
                  if (s.command !== null) commands.add(s.command);
                  owed.clear();
                }
                break;
              }
              case 'recordStatus':
                journal.recordStatus(s.report);
                owed.clear();
                break;
              case 'drop': {
                const seq =
                  s.pending && before.length ? before[s.pick % before.length]!.seq : s.pick;
                const pending = before.some((r) => r.seq === seq);
                expect(journal.dropReport(seq)).toBe(pending);
                if (pending) owed.add(seq);
                break;
              }
              case 'commitDrops':
                journal.commitDrops();
                owed.clear();
                break;
              case 'reopen':
                journal.close();
                owed.clear();
                journal = Journal.open(where);
                break;
            }
            const expected = outboxInFile(where).filter((r) => !owed.has(r.seq));
            expect(journal.pendingReportTexts()).toEqual(expected);
            expect(journal.pendingReports()).toEqual(
              expected.map((r) => ({ seq: r.seq, report: JSON.parse(r.body) as TerminalReport })),
            );
            const last = journal.lastSeq();
            for (let seq = 0; seq <= last + 1; seq++) {
              const previous = expected.filter((r) => r.seq < seq).at(-1)?.seq ?? 0;
              expect(journal.previousReport(seq)).toBe(previous);
              expect(journal.pendingReportTexts(seq, 2)).toEqual(
                expected.filter((r) => r.seq > seq).slice(0, 2),
              );
            }
          }
        } finally {
          journal.close();
        }
      }),
      { seed: 20_260_301, numRuns: 100 },
    );
  });
});
