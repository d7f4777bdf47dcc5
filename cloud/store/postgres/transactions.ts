/**
 * The PostgreSQL store's transactions and commands (ports/transactions.ts): reads on the
 * pool; a change and an acknowledgement commit in groups (group-commit.ts, writes.ts).
 */
import type pg from 'pg';
import type { TerminalCommand } from '../../../protocol/index.js';
import type { Decide } from '../../transactions/change.js';
import type { ChangeKey, TransactionStore } from '../ports/transactions.js';
import type { PendingCommand, TransactionQuery, TransactionRecord } from '../records.js';
import { UNCONFIRMED_STATES, toTransaction, type TransactionRow } from '../rows.js';
import type { GroupCommit } from './group-commit.js';
import { TX_COLUMNS } from './statements.js';
import { ackWrite, changeWrite } from './writes.js';

export function postgresTransactions(pool: pg.Pool, batches: GroupCommit): TransactionStore {
  return {
    async getTransaction(
      terminalId: string,
      externalId: string,
    ): Promise<TransactionRecord | undefined> {
      const { rows } = await pool.query<TransactionRow>({
        name: 'tps_transaction_by_key',
        text: `SELECT ${TX_COLUMNS} FROM transactions WHERE terminal_id = $1 AND external_id = $2`,
        values: [terminalId, externalId],
      });
      return rows[0] ? toTransaction(rows[0]) : undefined;
    },

    async getTransactionById(id: string): Promise<TransactionRecord | undefined> {
      const { rows } = await pool.query<TransactionRow>({
        name: 'tps_transaction_by_id',
        text: `SELECT ${TX_COLUMNS} FROM transactions WHERE id = $1`,
        values: [id],
      });
      return rows[0] ? toTransaction(rows[0]) : undefined;
    },

    async listUnconfirmed(terminalId: string): Promise<TransactionRecord[]> {
      const { rows } = await pool.query<TransactionRow>(
        `SELECT ${TX_COLUMNS} FROM transactions WHERE terminal_id = $1 AND state IN ${UNCONFIRMED_STATES} ORDER BY id`,
        [terminalId],
      );
      return rows.map(toTransaction);
    },

    async searchTransactions(query: TransactionQuery): Promise<TransactionRecord[]> {
      // Each filter applies when given (NULL: any); newest first by (created_at, id), after
      // the row $5 in that order.
      const { rows } = await pool.query<TransactionRow>({
        name: 'tps_transaction_search',
        text: `SELECT ${TX_COLUMNS} FROM transactions WHERE account_id = $1
               AND ($2::text IS NULL OR terminal_id = $2) AND ($3::text IS NULL OR external_id = $3)
               AND ($4::text IS NULL OR state = $4)
               AND ($5::text IS NULL OR (created_at, id) <
                     ((SELECT created_at FROM transactions WHERE id = $5), $5))
             ORDER BY created_at DESC, id DESC LIMIT $6`,
        values: [
          query.accountId,
          query.terminalId ?? null,
          query.externalId ?? null,
          query.state ?? null,
          query.beforeId ?? null,
          query.limit,
        ],
      });
      return rows.map(toTransaction);
    },

    async listRefunds(originalId: string): Promise<TransactionRecord[]> {
      const { rows } = await pool.query<TransactionRow>(
        `SELECT ${TX_COLUMNS} FROM transactions WHERE original_id = $1 ORDER BY id`,
        [originalId],
      );
      return rows.map(toTransaction);
    },

    async listDue(until: string, limit: number): Promise<TransactionRecord[]> {
      const { rows } = await pool.query<TransactionRow>(
        `SELECT ${TX_COLUMNS} FROM transactions WHERE due_at IS NOT NULL AND due_at <= $1 ORDER BY due_at LIMIT $2`,
        [until, limit],
      );
      return rows.map(toTransaction);
    },

    async nextDueAt(): Promise<string | undefined> {
      const { rows } = await pool.query<{ due_at: string }>(
        'SELECT due_at FROM transactions WHERE due_at IS NOT NULL ORDER BY due_at LIMIT 1',
      );
      return rows[0]?.due_at;
    },

    /** A write of a batch (see writes.ts changeWrite). */
    changeTransaction<R>(key: ChangeKey, decide: Decide<R>): Promise<R> {
      return batches.write(changeWrite(key, decide));
    },

    async queueCommand(terminalId: string, command: TerminalCommand): Promise<void> {
      await pool.query(
        'INSERT INTO terminal_commands (command_id, terminal_id, body, created_at) VALUES ($1, $2, $3, $4)',
        [command.command_id, terminalId, JSON.stringify(command), new Date().toISOString()],
      );
    },

    async pendingCommands(): Promise<PendingCommand[]> {
      const { rows } = await pool.query<{ terminal_id: string; body: string }>(
        'SELECT terminal_id, body FROM terminal_commands WHERE acked_at IS NULL ORDER BY seq',
      );
      return rows.map((row) => ({ terminalId: row.terminal_id, command: JSON.parse(row.body) }));
    },

    ackCommand(terminalId: string, commandId: string, at: string): Promise<void> {
      return batches.write(ackWrite(terminalId, commandId, at));
    },
  };
}
