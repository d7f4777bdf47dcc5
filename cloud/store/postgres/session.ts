/**
 * A connection of its own, kept open beside the pool: the change bus LISTENs on one, the
 * leadership lock holds its advisory lock in one. When it drops, or fails to open, it is
 * opened again after the back-off's next wait; one that opens resets the back-off.
 */
import pg from 'pg';
import { Backoff } from '../../../common/backoff.js';

export interface SessionOptions {
  connection: pg.ClientConfig;
  /** Default: 100 ms growing to 5 s, jittered, so relays that lost the database together do not come back together. */
  backoff?: Pick<Backoff, 'next' | 'reset'>;
  /** Prepares a connection just opened (LISTEN); a failure counts as a drop. */
  setUp?(client: pg.Client): Promise<unknown>;
  /** The session is open (again) and set up. */
  onOpen(client: pg.Client): void;
  /** The session dropped, or failed to open: it is opened again in `retryInMs`. */
  onLost(error: unknown, retryInMs: number): void;
}

export class Session {
  private current: pg.Client | undefined;
  /** The current connection is open and set up. */
  private ready = false;
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private closed = false;
  private readonly backoff: Pick<Backoff, 'next' | 'reset'>;

  constructor(private readonly options: SessionOptions) {
    this.backoff = options.backoff ?? new Backoff({ initialMs: 100, maxMs: 5000 });
  }

  /** The connection while it is open and set up; undefined while it opens or is away. */
  get client(): pg.Client | undefined {
    return this.ready ? this.current : undefined;
  }

  /** Opens the session, and keeps it open until close(). */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    void this.open();
  }

  private async open(): Promise<void> {
    this.timer = undefined;
    if (this.closed) return;
    const client = new pg.Client({ ...this.options.connection, keepAlive: true });
    this.current = client;
    this.ready = false;
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await this.options.setUp?.(client);
    } catch (error) {
      this.lost(client, error);
      return;
    }
    if (this.current !== client) return;
    this.ready = true;
    this.backoff.reset();
    this.options.onOpen(client);
  }

  /** Ends `client` as lost (it stopped answering): the session opens again, as after a drop. */
  drop(client: pg.Client, error: unknown): void {
    client.connection.stream.destroy();
    this.lost(client, error);
  }

  private lost(client: pg.Client, error?: unknown): void {
    if (this.current !== client) return;
    this.current = undefined;
    this.ready = false;
    client.end().catch(() => {});
    if (this.closed) return;
    const retryInMs = this.backoff.next();
    this.timer = setTimeout(() => void this.open(), retryInMs);
    this.options.onLost(error, retryInMs);
  }

  /** Ends the session for good; `last` runs on it first if it is open (to let a lock go). */
  async close(last?: (client: pg.Client) => Promise<unknown>): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const client = this.current;
    const ready = this.ready;
    this.current = undefined;
    this.ready = false;
    if (!client) return;
    if (ready && last) await last(client).catch(() => {});
    await client.end().catch(() => {});
  }
}
