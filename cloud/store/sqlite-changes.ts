/**
 * The SQLite store's transaction changes, decided on the relay's thread on what the store
 * holds and checked again inside their commit (sqlite-transactions.ts applyChange): if the
 * transaction moved in between (a concurrent change), the change is decided again on the
 * new state. The transactions this process wrote or read are kept in memory
 * (KEPT_TRANSACTIONS), so that the steps after a create decide and answer without
 * reading the file again.
 */
import type Database from 'better-sqlite3';
import type { ChangeContext, Decide } from '../transactions/change.js';
import { BoundedMap } from '../../common/bounded-map.js';
import type { TransactionRecord } from './records.js';
import { ACTIVE_STATES, IN_UNCONFIRMED_INDEX, toTransaction, type TransactionRow } from './rows.js';
import { ReportOutOfOrder, checkReport } from '../delivery/report-order.js';
import type { ChangeKey } from './store.js';
import type { SqliteWriter } from './sqlite-writer.js';
import {
  SHARED_SQL,
  WriteConflict,
  refundsSeen,
  toCommandWrite,
  toEventWrite,
  toLastReport,
  toTransactionWrite,
  type DecidedOn,
  type LastReportRow,
} from './sqlite-write-steps.js';

/**
 * Decisions taken again after a conflict before giving up. Changes of one terminal are
 * queued in this process, so a conflict needs another process writing the same file.
 */
const MAX_DECISIONS = 50;

/**
 * Transactions kept after this process wrote or read them (a few KB each), so that
 * the steps after a create (the terminal's result, the long poll, the confirm) do not read
 * the file again. Under load each commit of the writer thread, on its own connection,
 * empties the page cache of the relay thread's connection, and a read after it fetches
 * its pages from the file again. A kept transaction is the file's own while this process
 * is the file's only writer (one relay per data directory, data-dir-lock.ts); a change
 * decided on one that another process has since moved still fails its commit check and is
 * decided again on the file's row.
 */
const KEPT_TRANSACTIONS = 2_000;
const transactionKey = (terminalId: string, externalId: string) =>
  `${terminalId}\u0000${externalId}`;

export class SqliteChanges {
  private readonly statements;
  /** Each terminal's account, as changes read it: a terminal never changes hands. */
  private readonly owners = new Map<string, string>();
  /** Transactions by transactionKey, as last written or read here (see KEPT_TRANSACTIONS); frozen. */
  private readonly kept = new BoundedMap<string, TransactionRecord>(KEPT_TRANSACTIONS);
  /** The change last begun on each terminal: changes of one terminal run one after another. */
  private readonly terminalChanges = new Map<string, Promise<unknown>>();
  /** Reads a change's context in one read transaction: a snapshot, whatever commits meanwhile. */
  private readonly readContextSnapshot: (
    key: ChangeKey,
    fromFile: boolean,
  ) => ReturnType<SqliteChanges['readContext']>;

  constructor(
    /** The relay thread's connection. */
    db: Database.Database,
    private readonly writer: SqliteWriter,
  ) {
    this.readContextSnapshot = db.transaction((key: ChangeKey, fromFile: boolean) =>
      this.readContext(key, fromFile),
    );
    this.statements = {
      transactionByKey: db.prepare<[string, string], TransactionRow>(
        'SELECT * FROM transactions WHERE terminal_id = ? AND external_id = ?',
      ),
      activeOnTerminal: db.prepare<[string, string], TransactionRow>(
        `SELECT * FROM transactions WHERE terminal_id = ? AND ${IN_UNCONFIRMED_INDEX} AND state IN ${ACTIVE_STATES} AND external_id <> ? LIMIT 1`,
      ),
      unconfirmedCount: db.prepare<[string], { n: number }>(SHARED_SQL.unconfirmedCount),
      refunds: db.prepare<[string], TransactionRow>(
        'SELECT * FROM transactions WHERE original_id = ? ORDER BY id',
      ),
      owner: db.prepare<[string], { account_id: string }>(
        'SELECT account_id FROM terminals WHERE id = ?',
      ),
      lastReport: db.prepare<[string], LastReportRow>(SHARED_SQL.lastReport),
    };
  }

  /** A transaction, kept or else read (and kept); `fromFile` reads it in any case. */
  transaction(
    terminalId: string,
    externalId: string,
    fromFile = false,
  ): TransactionRecord | undefined {
    const key = transactionKey(terminalId, externalId);
    const kept = fromFile ? undefined : this.kept.get(key);
    if (kept) return kept;
    const row = this.statements.transactionByKey.get(terminalId, externalId);
    if (!row) {
      this.kept.delete(key);
      return undefined;
    }
    return this.keep(key, toTransaction(row));
  }

  /**
   * Keeps a transaction unless a later version of it is kept already. It is frozen: the
   * same object answers every later read, so nothing may change it in place.
   */
  private keep(key: string, record: TransactionRecord): TransactionRecord {
    Object.freeze(record.txn);
    Object.freeze(record);
    const kept = this.kept.get(key);
    if (!kept || kept.version <= record.version) this.kept.set(key, record);
    return record;
  }

  /**
   * Decides on what the store holds and writes the outcome, checked again in the commit.
   * Changes of one terminal wait for each other, so that they do not decide on the same
   * state; a change that still meets a moved state (another process on the same file) is
   * decided again.
   */
  change<R>(key: ChangeKey, decide: Decide<R>): Promise<R> {
    const before = this.terminalChanges.get(key.terminalId);
    const change = before
      ? before.then(
          () => this.decideAndWrite(key, decide),
          () => this.decideAndWrite(key, decide),
        )
      : this.decideAndWrite(key, decide);
    const done = change.then(
      () => undefined,
      () => undefined,
    );
    this.terminalChanges.set(key.terminalId, done);
    void done.then(() => {
      if (this.terminalChanges.get(key.terminalId) === done)
        this.terminalChanges.delete(key.terminalId);
    });
    return change;
  }

  private async decideAndWrite<R>(key: ChangeKey, decide: Decide<R>): Promise<R> {
    const keptAs = transactionKey(key.terminalId, key.externalId);
    for (let decisions = 1; ; decisions++) {
      // After a conflict the kept row may be another process's past: read the file's.
      const fromFile = decisions > 1;
      // One statement reads a consistent state by itself; several share a read transaction.
      const { context, decidedOn, lastReport } =
        key.forCreate || key.original || key.report
          ? this.readContextSnapshot(key, fromFile)
          : this.readContext(key, fromFile);
      // A report applied before (or ahead of its predecessor) is not decided at all; the
      // commit checks its position again.
      if (key.report) {
        const verdict = checkReport(lastReport, key.report);
        if (verdict !== 'apply') throw new ReportOutOfOrder(verdict);
      }
      const change = decide(context);
      const commands = change.commands ?? [];
      const events = change.events ?? [];
      if (!change.write && commands.length === 0 && events.length === 0 && !key.report) {
        return change.result;
      }
      const write = change.write && toTransactionWrite(change.write);
      try {
        await this.writer.write({
          op: 'applyChange',
          arg: {
            key,
            decidedOn,
            ...(write ? { write } : {}),
            commands: commands.map(toCommandWrite),
            // An event of the change carries the transaction as written: its JSON is made once.
            events: events.map((event) =>
              write && event.data === change.write?.txn
                ? { ...event, data: write.body }
                : toEventWrite(event),
            ),
          },
        });
        if (change.write) this.keep(keptAs, change.write);
        return change.result;
      } catch (error) {
        // Whether or not the row was written, the file says what it holds now.
        this.kept.delete(keptAs);
        if (!(error instanceof WriteConflict) || decisions >= MAX_DECISIONS) throw error;
      }
    }
  }

  private ownerOf(terminalId: string): string | undefined {
    let owner = this.owners.get(terminalId);
    if (owner === undefined) {
      owner = this.statements.owner.get(terminalId)?.account_id;
      if (owner !== undefined) this.owners.set(terminalId, owner);
    }
    return owner;
  }

  /** What a change's decision sees, and the same in the terms the writer checks again. */
  private readContext(
    key: ChangeKey,
    fromFile: boolean,
  ): {
    context: ChangeContext;
    decidedOn: DecidedOn;
    lastReport: { journal: string | undefined; seq: number };
  } {
    const s = this.statements;
    const lastReport = toLastReport(key.report ? s.lastReport.get(key.terminalId) : undefined);
    const current = this.transaction(key.terminalId, key.externalId, fromFile);
    const context: ChangeContext = {
      terminalOwner: this.ownerOf(key.terminalId),
      current,
      active: undefined,
      unconfirmedCount: 0,
    };
    const decidedOn: DecidedOn = { currentVersion: current?.version ?? null };
    if (key.forCreate) {
      const active = s.activeOnTerminal.get(key.terminalId, key.externalId);
      context.active = active ? toTransaction(active) : undefined;
      context.unconfirmedCount = s.unconfirmedCount.get(key.terminalId)?.n ?? 0;
      decidedOn.activeId = active?.id ?? null;
      decidedOn.unconfirmedCount = context.unconfirmedCount;
    }
    if (key.original) {
      const original = s.transactionByKey.get(key.original.terminalId, key.original.externalId);
      const refunds = original ? s.refunds.all(original.id).map(toTransaction) : [];
      context.original = { record: original ? toTransaction(original) : undefined, refunds };
      decidedOn.originalVersion = original?.version ?? null;
      decidedOn.refunds = refundsSeen(refunds.map((r) => ({ id: r.txn.id, version: r.version })));
    }
    return { context, decidedOn, lastReport };
  }
}
