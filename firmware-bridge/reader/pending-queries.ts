/**
 * Queries waiting for their answers, matched by `query_id`. The answer timer starts once
 * the reader has acknowledged the query (the link's own retries cover the way there), so
 * a slow line does not eat into the time the firmware has to answer.
 */
import { SerialLinkError } from '../serial/errors.js';
import type { Timers } from '../../common/clock.js';

interface Entry<T> {
  resolve: (value: T) => void;
  reject: (error: SerialLinkError) => void;
  acknowledged: boolean;
  timer?: unknown;
}

export class PendingQueries<T> {
  /** In the order asked: the oldest first. */
  private readonly pending = new Map<string, Entry<T>>();

  constructor(
    private readonly type: string,
    private readonly timeoutMs: number,
    private readonly timers: Timers,
  ) {}

  /** Waits for the answer to the query `id`, from now on (register before sending). */
  wait(id: string): Promise<T> {
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, acknowledged: false });
    });
  }

  /** The reader acknowledged the query: from now on it has `timeoutMs` to answer. */
  acknowledged(id: string): void {
    const entry = this.pending.get(id);
    if (!entry) return;
    entry.acknowledged = true;
    entry.timer = this.timers.setTimeout(() => {
      this.settle(id)?.reject(
        new SerialLinkError(
          'ANSWER_TIMEOUT',
          `the reader acknowledged ${this.type} (query ${id}) but sent no answer within ${this.timeoutMs} ms`,
        ),
      );
    }, this.timeoutMs);
  }

  /**
   * An answer. With a query id it answers that query only (a late answer to a query that
   * timed out answers nothing). Without one (firmware that does not echo ids) it answers
   * the oldest query, or with `acknowledgedOnly` the oldest the reader has already seen.
   */
  answer(id: string | undefined, value: T, acknowledgedOnly = false): boolean {
    const key = id ?? this.oldest(acknowledgedOnly);
    if (key === undefined) return false;
    const entry = this.settle(key);
    entry?.resolve(value);
    return entry !== undefined;
  }

  fail(id: string, error: SerialLinkError): void {
    this.settle(id)?.reject(error);
  }

  failAll(error: SerialLinkError): void {
    for (const id of [...this.pending.keys()]) this.fail(id, error);
  }

  private oldest(acknowledgedOnly: boolean): string | undefined {
    for (const [id, entry] of this.pending) if (!acknowledgedOnly || entry.acknowledged) return id;
    return undefined;
  }

  private settle(id: string): Entry<T> | undefined {
    const entry = this.pending.get(id);
    if (!entry) return undefined;
    this.pending.delete(id);
    if (entry.timer !== undefined) this.timers.clearTimeout(entry.timer);
    return entry;
  }
}
