/**
 * The shared store: PostgreSQL, for several relay processes on one database. Behaves as
 * the SQLite store does (../sqlite.ts is the reference); what differs is how it stays
 * right with other processes committing beside it:
 *
 * - A change locks its terminal's row first (`FOR UPDATE`): every change of one terminal,
 *   in whichever process, waits for the one before it, so the checks its decision makes
 *   (one active transaction, the unconfirmed limit, a report's order) hold across
 *   processes. A referenced refund also locks its original purchase, so refunds through
 *   different terminals reserve its amount one after the other.
 * - Event positions come from a one-row counter taken as the last step before COMMIT: its
 *   row lock, held until the commit, hands out positions in commit order, so a reader
 *   that has read up to a position never sees a lower one appear later.
 * - A commit that changed something NOTIFYs the other relays in the same transaction
 *   (change-bus.ts), so they hear of it only if it commits.
 *
 * Writes that decide on what they read (changes, status updates, reports,
 * acknowledgements, writes.ts) commit in groups (group-commit.ts). Reads, and the writes
 * that decide nothing, go to the pool directly, outside the batches.
 *
 * Each port is implemented in its module (accounts.ts, terminals.ts, transactions.ts,
 * events.ts, fleet.ts with pairings.ts, releases.ts, rollouts.ts); this class opens the
 * batches and puts them together (../ports-store.ts).
 */
import type pg from 'pg';
import { PortsStore, type StorePorts } from '../ports-store.js';
import { encodeNotice, type Sender } from './change-bus.js';
import { withClient, type Logger, type WithClient } from './connection.js';
import { GroupCommit } from './group-commit.js';
import { postgresAccounts } from './accounts.js';
import { postgresEvents } from './events.js';
import { postgresFleet } from './fleet.js';
import { postgresTerminals } from './terminals.js';
import { postgresTransactions } from './transactions.js';

export class PostgresStore extends PortsStore {
  private closed = false;
  private readonly batches: GroupCommit;
  protected readonly ports: StorePorts;

  constructor(
    private readonly pool: pg.Pool,
    /** Who this store's commits notify as (see change-bus.ts). */
    private readonly sender: Sender,
    batches: { concurrency: number; size: number },
    private readonly logger: Logger,
  ) {
    super();
    this.batches = new GroupCommit(
      pool,
      (change) => encodeNotice(sender, change),
      batches.concurrency,
      batches.size,
      logger,
    );
    /** Runs `work` on a connection of the pool; on failure rolls back what it left open. */
    const onClient: WithClient = (work) => withClient(this.pool, this.logger, work);
    const accounts = postgresAccounts(pool, onClient);
    this.ports = {
      accounts,
      settings: accounts,
      terminals: postgresTerminals(pool, this.batches),
      transactions: postgresTransactions(pool, this.batches),
      events: postgresEvents(pool, onClient),
      fleet: postgresFleet(pool, onClient, (change) => encodeNotice(this.sender, change)),
    };
  }

  /** Resolves once every write queued has been answered. */
  drain(): Promise<void> {
    return this.batches.drain();
  }

  /** Answers the writes queued, then ends the pool. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.batches.drain();
    await this.pool.end();
  }
}
