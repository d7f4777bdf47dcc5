/**
 * Progress of long work on the command line (a print at 9,600 baud takes minutes): how
 * much is done, the share and an estimate of the time left, on stderr only, so that it
 * never mixes with a result on stdout. On a terminal one line is rewritten in place;
 * elsewhere (a log, when asked with --progress) a line is added at each report.
 */

export interface ProgressOptions {
  /** Where the lines go: standard error. */
  write: (text: string) => void;
  /** A terminal: rewrite one line in place. */
  tty: boolean;
  /** What is being done, at the start of each line (`tps bridge print`). */
  label: string;
  /** The unit counted (`bytes`). */
  unit: string;
  /** Milliseconds since some fixed point; injected so tests need no waiting. */
  now: () => number;
  /** Least time between two reports (default 1 s on a terminal, 5 s elsewhere). */
  intervalMs?: number;
}

export interface Progress {
  /** `done` of `total` units; reported when the interval has passed, or when all is done. */
  update(done: number, total: number): void;
  /** Ends the line in place (on a terminal), so what follows starts on a line of its own. */
  end(): void;
}

const number = (value: number) => value.toLocaleString('en-US');

function duration(ms: number): string {
  const s = Math.max(1, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(s % 60).padStart(2, '0')} s`;
}

/** The text of one report: `12,288 of 58,504 bytes (21 %), about 48 s left`. */
export function progressText(done: number, total: number, elapsedMs: number, unit: string) {
  const share = total > 0 ? Math.floor((done / total) * 100) : 100;
  const text = `${number(done)} of ${number(total)} ${unit} (${share} %)`;
  if (done >= total) return `${text}, done in ${duration(elapsedMs)}`;
  // The rate so far is the best guess once there is any: a line's speed is steady.
  if (done === 0 || elapsedMs < 500) return text;
  return `${text}, about ${duration(((total - done) * elapsedMs) / done)} left`;
}

export function progressReporter(options: ProgressOptions): Progress {
  const interval = options.intervalMs ?? (options.tty ? 1000 : 5000);
  const started = options.now();
  let last: number | undefined;
  let open = false;
  return {
    update(done, total) {
      const now = options.now();
      const finished = done >= total;
      if (!finished && last !== undefined && now - last < interval) return;
      last = now;
      const line = `${options.label}: ${progressText(done, total, now - started, options.unit)}`;
      if (options.tty) {
        options.write(`\r${line}\x1b[K`);
        open = true;
      } else {
        options.write(`${line}\n`);
      }
    },
    end() {
      if (open) options.write('\n');
      open = false;
    },
  };
}
