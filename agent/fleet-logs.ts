/**
 * The agent's last log lines for remote diagnostics (docs/fleet.md, "Diagnostics"), and
 * its log level set from afar. Lines are kept as written, after the redactor of
 * agent/logging.ts took secrets and card data out of them, in a ring of a fixed number of
 * lines, each cut to a fixed length: the memory it takes is bounded.
 */
import type { DestinationStream, Logger } from 'pino';
import { DIAGNOSTIC_LOG_LINES } from '../protocol/fleet-diagnostics.js';

/** A line longer than this is kept cut, with a mark. */
export const MAX_KEPT_LINE = 2000;

export class LogRing {
  private readonly lines: string[] = [];
  private next = 0;

  constructor(readonly capacity = DIAGNOSTIC_LOG_LINES) {}

  push(text: string): void {
    for (const raw of text.split('\n')) {
      if (!raw) continue;
      const line = raw.length > MAX_KEPT_LINE ? `${raw.slice(0, MAX_KEPT_LINE)}…[cut]` : raw;
      if (this.lines.length < this.capacity) this.lines.push(line);
      else this.lines[this.next] = line;
      this.next = (this.next + 1) % this.capacity;
    }
  }

  /** The newest `count` lines, oldest first. */
  newest(count: number): string[] {
    const ordered =
      this.lines.length < this.capacity
        ? this.lines
        : [...this.lines.slice(this.next), ...this.lines.slice(0, this.next)];
    return ordered.slice(Math.max(0, ordered.length - count));
  }
}

/** A destination that writes to `out` and keeps each line in `ring`. */
export function keepingLines(ring: LogRing, out: DestinationStream): DestinationStream {
  return {
    write(line: string) {
      ring.push(line);
      return out.write(line);
    },
  };
}

/**
 * The level of a logger and of every child made from it. pino gives each child a level of
 * its own when it is made; the children are followed (weakly: a dropped child is not
 * kept alive) so that a new level reaches them all. Pass `onChild` to pino.
 */
export class LogLevels {
  private readonly children = new Set<WeakRef<Logger>>();
  root: Logger | undefined;

  readonly onChild = (child: Logger): void => {
    this.children.add(new WeakRef(child));
  };

  set(level: string): void {
    if (this.root && this.root.level !== level) this.root.level = level;
    for (const ref of this.children) {
      const child = ref.deref();
      if (!child) this.children.delete(ref);
      else if (child.level !== level) child.level = level;
    }
  }
}
