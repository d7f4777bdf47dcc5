import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TerminalReport } from '../protocol/terminal-link.js';
import { Journal, type TransactionRow } from './journal.js';

const dir = () => mkdtempSync(path.join(tmpdir(), 'agent-journal-'));
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
