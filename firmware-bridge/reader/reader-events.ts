/**
 * Records a CardReader's events so that a test (or a bench tool) can wait for one that may
 * already have arrived: `waitFor()` looks at the log from a mark on, then at what comes.
 */
import type { CardReader, CardReaderEvent, CardReaderEvents } from './card-reader.js';

type Payload<E extends CardReaderEvent> = CardReaderEvents[E][0];
type Entry = { [E in CardReaderEvent]: { event: E; payload: Payload<E> } }[CardReaderEvent];

const EVENTS: CardReaderEvent[] = ['progress', 'customer_identified', 'result', 'status', 'close'];

export class ReaderEventLog {
  readonly entries: Entry[] = [];
  private readonly waiters = new Set<() => void>();

  constructor(reader: CardReader) {
    for (const event of EVENTS) {
      reader.on(event, (payload?: unknown) => {
        this.entries.push({ event, payload } as Entry);
        for (const wake of [...this.waiters]) wake();
      });
    }
  }

  /** A position in the log: pass it to waitFor() to see only what came after. */
  mark(): number {
    return this.entries.length;
  }

  /** Every payload of `event` from `since` on. */
  all<E extends CardReaderEvent>(event: E, since = 0): Payload<E>[] {
    return this.entries
      .slice(since)
      .filter((entry) => entry.event === event)
      .map((entry) => entry.payload as Payload<E>);
  }

  /** The first payload of `event` from `since` on that matches; rejects after `timeoutMs`. */
  waitFor<E extends CardReaderEvent>(
    event: E,
    match: (payload: Payload<E>) => boolean = () => true,
    options: { since?: number; timeoutMs?: number } = {},
  ): Promise<Payload<E>> {
    // Entries, not payloads: a 'close' without an error has an undefined payload.
    const find = () =>
      this.entries
        .slice(options.since ?? 0)
        .find((entry) => entry.event === event && match(entry.payload as Payload<E>));
    const found = find();
    if (found) return Promise.resolve(found.payload as Payload<E>);
    const timeoutMs = options.timeoutMs ?? 10_000;
    return new Promise((resolve, reject) => {
      const wake = () => {
        const hit = find();
        if (!hit) return;
        this.waiters.delete(wake);
        clearTimeout(timer);
        resolve(hit.payload as Payload<E>);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(wake);
        reject(new Error(`no matching '${event}' event within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(wake);
    });
  }
}
