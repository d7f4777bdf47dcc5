/**
 * The leadership lock on PostgreSQL: a session advisory lock (per schema), tried every
 * `retryMs` on a connection of its own (session.ts) until taken. It lasts as long as that
 * session: when the connection drops, `onLose` is called, the session is opened again
 * and the trying starts over; when a process dies, the database ends its session and
 * another takes the lead at its next try. While leading, the session is probed at the
 * same pace: one that stops answering (the database out of reach) counts as lost, rather
 * than leaving this process to believe it still leads.
 */
import type pg from 'pg';
import type { LeadershipLock } from '../../cluster/leadership-lock.js';
import type { Logger } from './connection.js';
import { withDeadline } from '../../../common/deadline.js';
import { Session } from './session.js';

/** First half of the leadership lock's key; the second is hashtext(schema). */
const LEADER_LOCK_CLASS = 1953526529;

export class PostgresLeadershipLock implements LeadershipLock {
  private readonly session: Session;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private leading = false;
  private stopped = false;
  private onLead: () => void = () => {};
  private onLose: () => void = () => {};

  constructor(
    connection: pg.ClientConfig,
    private readonly schema: string,
    private readonly retryMs: number,
    private readonly logger: Logger,
    /** How long a probe of the session may go unanswered. */
    private readonly probeTimeoutMs = Math.max(5 * retryMs, 5000),
  ) {
    this.session = new Session({
      connection,
      // Opened again at the pace the lock is tried.
      backoff: { next: () => retryMs, reset: () => {} },
      onOpen: () => void this.step(),
      onLost: (error) => this.lost(error),
    });
  }

  start(onLead: () => void, onLose: () => void): void {
    if (this.stopped) return;
    this.onLead = onLead;
    this.onLose = onLose;
    this.session.start();
  }

  private schedule(): void {
    if (this.stopped || this.busy || this.timer || !this.session.client) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.step();
    }, this.retryMs);
  }

  /** Tries to take the lock, or, leading, checks that the session still answers. */
  private async step(): Promise<void> {
    const client = this.session.client;
    if (this.stopped || this.busy || !client) return;
    this.busy = true;
    let tookLead = false;
    try {
      if (this.leading) await this.probe(client);
      else {
        const { rows } = await client.query<{ taken: boolean }>(
          'SELECT pg_try_advisory_lock($1, hashtext($2)) AS taken',
          [LEADER_LOCK_CLASS, this.schema],
        );
        // Stopped meanwhile: stop() ends the session, which lets the lock go.
        if (rows[0]?.taken && !this.stopped && this.session.client === client) {
          this.leading = tookLead = true;
        }
      }
    } catch {
      // The connection failed: the session is opened again, and the trying starts over.
    } finally {
      this.busy = false;
    }
    if (tookLead) this.call(this.onLead);
    this.schedule();
  }

  private async probe(client: pg.Client): Promise<void> {
    try {
      // A stall of this relay past the deadline is not taken for a lost session.
      await withDeadline(client.query('SELECT 1'), this.probeTimeoutMs);
    } catch (error) {
      this.session.drop(client, error);
      throw error;
    }
  }

  /** The session dropped (it is being opened again): a lead held in it is gone. */
  private lost(error: unknown): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.stopped || !this.leading) return;
    this.leading = false;
    this.logger.warn({ err: error }, 'PostgreSQL leadership session lost');
    this.call(this.onLose);
  }

  private call(callback: () => void): void {
    try {
      callback();
    } catch (error) {
      this.logger.warn({ err: error }, 'leadership callback failed');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.session.close(async (client) => {
      if (this.leading) {
        await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [
          LEADER_LOCK_CLASS,
          this.schema,
        ]);
      }
    });
    this.leading = false;
  }
}
