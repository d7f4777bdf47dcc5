/**
 * The change bus on PostgreSQL: notices travel on one NOTIFY channel. A commit that
 * changed something NOTIFYs in its own transaction (the store's last statement before
 * COMMIT, see statements.ts logQuery), so the other relays hear of it only if it commits,
 * and never before its data can be read; an announcement is a NOTIFY of its own. Each
 * relay LISTENs on a connection of its own (session.ts), opened on the first subscribe
 * and opened again whenever it drops. Notices are scoped to the schema: relays of
 * another schema in the database are not this relay's peers.
 *
 * The encoding of notices lives here, for the store's commits and the announcements
 * alike: the channel, the envelope (who sent it) and its schema, and the size limit.
 */
import type pg from 'pg';
import { z } from 'zod';
import { EVENT_KINDS } from '../../../protocol/index.js';
import type { ChangeBus, ChangeNotice } from '../../cluster/change-bus.js';
import type { Logger } from './connection.js';
import type { Backoff } from '../../../common/backoff.js';
import { Session } from './session.js';

/** The channel of ChangeNotice notifications. */
export const CHANNEL = 'tps_changes';

/** A change as another process announced it (the shape of ChangeNotice, checked below). */
const ChangeSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('transaction'),
    terminalId: z.string(),
    externalId: z.string(),
    version: z.number(),
    dueAt: z.string().optional(),
  }),
  z.object({
    kind: z.literal('events'),
    events: z
      .array(z.object({ accountId: z.string(), subject: z.string(), kind: z.enum(EVENT_KINDS) }))
      .optional(),
  }),
  z.object({ kind: z.literal('command-acked'), commandId: z.string() }),
  z.object({ kind: z.literal('report'), terminalId: z.string() }),
  z.object({ kind: z.literal('webhooks') }),
  z.object({ kind: z.literal('simulator'), terminalId: z.string() }),
  z.object({
    kind: z.literal('credential'),
    type: z.enum(['API', 'AGENT']),
    username: z.string(),
  }),
  z.object({ kind: z.literal('account'), accountId: z.string() }),
  z.object({ kind: z.literal('pairing'), code: z.string().optional() }),
  z.object({ kind: z.literal('resync') }),
]);
/** Fails to compile when ChangeNotice gains a member the schema does not know. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaMatchesChangeNotice: Same<z.infer<typeof ChangeSchema>, ChangeNotice> = true;
void schemaMatchesChangeNotice;

/** A notification on the channel; anything else there is ignored. */
const Notification = z.object({ origin: z.string(), schema: z.string(), change: ChangeSchema });

/** Well below NOTIFY's 8000 bytes: past it, an events notice leaves out which events. */
const NOTICE_MAX_BYTES = 2000;

/**
 * Who sends a relay's notices: its process (each relay hears only the others'), and the
 * schema its tables are in (relays of another schema in the database are not its peers).
 */
export interface Sender {
  origin: string;
  schema: string;
}

/** A notice as it goes out on the channel, in a commit or announced. */
export function encodeNotice(sender: Sender, change: ChangeNotice): string {
  const note = JSON.stringify({ ...sender, change });
  if (change.kind !== 'events' || Buffer.byteLength(note) <= NOTICE_MAX_BYTES) return note;
  // Too many to list: the readers read again.
  return JSON.stringify({ ...sender, change: { kind: 'events' } });
}

export class PostgresChangeBus implements ChangeBus {
  private readonly listeners = new Set<(change: ChangeNotice) => void>();
  private session: Session | undefined;
  private closed = false;

  constructor(
    /** The store's pool, which announcements go out on. */
    private readonly pool: pg.Pool,
    private readonly connection: pg.ClientConfig,
    private readonly sender: Sender,
    private readonly logger: Logger,
    /** Between attempts to listen again (default: 100 ms growing to 5 s, jittered). */
    private readonly backoff?: Pick<Backoff, 'next' | 'reset'>,
  ) {}

  /**
   * Calls `listener` with each change the other processes commit, from a connection of its
   * own that LISTENs (opened on the first call). Each time that connection is (re)opened,
   * listeners get `{ kind: 'resync' }`: a change may have been missed while it was not.
   */
  subscribe(listener: (change: ChangeNotice) => void): () => void {
    if (this.closed) return () => {};
    this.listeners.add(listener);
    if (!this.session) {
      this.session = new Session({
        connection: this.connection,
        ...(this.backoff ? { backoff: this.backoff } : {}),
        setUp: (client) => {
          client.on('notification', (message) => {
            if (message.channel === CHANNEL) this.deliver(message.payload);
          });
          return client.query(`LISTEN ${CHANNEL}`);
        },
        onOpen: () => this.notify({ kind: 'resync' }),
        onLost: (error, retryInMs) =>
          this.logger.warn(
            { err: error, retryInMs },
            `PostgreSQL connection listening on ${CHANNEL} lost`,
          ),
      });
      this.session.start();
    }
    return () => {
      this.listeners.delete(listener);
    };
  }

  private deliver(payload: string | undefined): void {
    let parsed: z.infer<typeof Notification> | undefined;
    try {
      const result = Notification.safeParse(JSON.parse(payload ?? ''));
      if (result.success) parsed = result.data;
    } catch {
      // not JSON: ignored below
    }
    if (!parsed) {
      this.logger.warn({ payload }, `invalid notification on ${CHANNEL} ignored`);
      return;
    }
    // Our own changes, or another relay's that keeps its tables in another schema.
    if (parsed.origin === this.sender.origin || parsed.schema !== this.sender.schema) return;
    this.notify(parsed.change);
  }

  private notify(change: ChangeNotice): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(change);
      } catch (error) {
        this.logger.warn({ err: error }, 'store change listener failed');
      }
    }
  }

  /** Sent at once, in a transaction of its own. */
  async announce(change: ChangeNotice): Promise<void> {
    await this.pool.query(`SELECT pg_notify('${CHANNEL}', $1)`, [
      encodeNotice(this.sender, change),
    ]);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    await this.session?.close();
  }
}
