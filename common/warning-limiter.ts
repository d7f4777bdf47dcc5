/**
 * A warning per kind at most every `everyMs`, saying how many were left unsaid since: a
 * peer hitting a limit at its own pace, or a fleet doing the same thing at once, must not
 * decide how much the relay logs. Counting every occurrence is a metric's job.
 */
import type { Logger } from 'pino';

export class WarningLimiter {
  private readonly last = new Map<string, { at: number; unsaid: number }>();

  constructor(
    private readonly logger: Pick<Logger, 'warn'>,
    private readonly everyMs = 10_000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Logs `message` with `fields` and `unsaid`, unless a warning of `kind` went out lately. */
  warn(kind: string, fields: Record<string, unknown>, message: string): void {
    const now = this.now();
    const last = this.last.get(kind);
    if (last && now - last.at < this.everyMs) {
      last.unsaid++;
      return;
    }
    this.logger.warn({ ...fields, unsaid: last?.unsaid ?? 0 }, message);
    this.last.set(kind, { at: now, unsaid: 0 });
  }
}
