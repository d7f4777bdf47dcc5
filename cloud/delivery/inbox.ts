/**
 * The report inbox: what terminals report is applied once each, in the order their agent
 * sent it, and acknowledged only once applied for good, so an agent keeps a report in its
 * outbox until the relay has it (docs/mqtt.md). It knows nothing of how reports travel
 * (each ordered report brings its own `acknowledge`) nor what they change (`apply`).
 *
 * Per terminal, one report at a time, in arrival order:
 *
 *   receive ─▶ applied before? ──yes──▶ acknowledge again
 *                 │ no
 *                 ▼
 *               apply ──applied──▶ acknowledge, then apply what it held back
 *                 │ gap: an earlier report is missing
 *                 ▼
 *               hold, unacknowledged, `holdMs` at most ──▶ dropped, for the agent to send again
 *
 * `apply` records a report's position in the same commit as what it changes, or refuses it
 * with ReportOutOfOrder: that, not this inbox's memory, is what makes "once" hold across
 * relays sharing the agents' traffic. A report's predecessor may be applied by another
 * relay: its notice (`onRemoteChange`) lets what is held here apply.
 */
import type { Logger } from 'pino';
import { systemTimers, type Timers } from '../../common/clock.js';
import { WarningLimiter } from '../../common/warning-limiter.js';
import type { ChangeBus } from '../cluster/change-bus.js';
import { ReportOutOfOrder, checkReport, type ReportPosition } from './report-order.js';

/** What an ordered report brings: its place in the agent's outbox, and how to acknowledge it. */
export interface Sequenced {
  position: ReportPosition;
  /** Tells the agent the report is applied for good: it may drop it from its outbox. */
  acknowledge(): void;
}

export type ReportOutcome = 'applied' | 'duplicate' | 'gap';

export interface ReportInboxOptions<R> {
  /**
   * Applies a report. With a position, the position is recorded in the same commit as the
   * change, or the report is refused with ReportOutOfOrder and nothing changes.
   */
  apply: (terminalId: string, report: R, position?: ReportPosition) => Promise<void>;
  onRemoteChange: ChangeBus['subscribe'];
  logger: Logger;
  timers?: Timers;
  /**
   * How long a report that arrived ahead of an earlier one is held for it; then it is
   * dropped unacknowledged, for the agent to send again. Default 3 s.
   */
  holdMs?: number;
  /**
   * At most this many reports are held per terminal (default 1000, an agent's batch): an
   * agent that keeps sending reports ahead of a missing one cannot fill the relay's memory.
   * One more is dropped at once, as if held and timed out.
   */
  maxHeld?: number;
  /** Counts what became of each ordered report (for metrics); `gap`: dropped, unacknowledged. */
  onOutcome?: (outcome: ReportOutcome) => void;
  /** The clock of the drop warnings' spacing, in ms (default performance.now). */
  now?: () => number;
}

interface Held<R> {
  report: R;
  sequenced: Sequenced;
  timer: unknown;
}

export class ReportInbox<R> {
  private readonly timers: Timers;
  private readonly holdMs: number;
  private readonly maxHeld: number;
  /** The newest report applied here per terminal: a cheap filter for redeliveries. */
  private readonly applied = new Map<string, ReportPosition>();
  /** Reports held per terminal, by seq: their predecessor has not been applied yet. */
  private readonly held = new Map<string, Map<number, Held<R>>>();
  /** Each terminal's reports are handled one after another, in arrival order. */
  private readonly queues = new Map<string, Promise<void>>();
  private closed = false;
  private readonly unwatch: () => void;
  /**
   * After a broker restart a fleet's reports arrive ahead of the ones lost with it, one
   * drop per agent: a warning every 10 s says how many, the `gap` outcome counts each.
   */
  private readonly dropWarnings: WarningLimiter;

  constructor(private readonly options: ReportInboxOptions<R>) {
    this.timers = options.timers ?? systemTimers;
    this.dropWarnings = new WarningLimiter(options.logger, 10_000, options.now);
    this.holdMs = options.holdMs ?? 3000;
    this.maxHeld = options.maxHeld ?? 1000;
    this.unwatch = options.onRemoteChange((change) => {
      // Another relay applied a report of this terminal: maybe the one held reports wait
      // for. Also when a report of it is being tried right now: that try may have read the
      // store before the commit and be about to hold its report, so look again after it.
      if (change.kind !== 'report') return;
      const { terminalId } = change;
      if (this.held.has(terminalId) || this.queues.has(terminalId)) {
        void this.enqueue(terminalId, () => this.applyHeld(terminalId));
      }
    });
  }

  /** Reports held for a missing predecessor, over all terminals. */
  get holding(): number {
    let n = 0;
    for (const held of this.held.values()) n += held.size;
    return n;
  }

  /**
   * Takes a report, after the terminal's earlier ones. An ordered one (`sequenced`) is
   * applied once, in order, and acknowledged; one without (a simulator's, a presence) is
   * simply applied. Resolves once handled; never rejects (a failure is logged, and an
   * ordered report left unacknowledged is sent again by its agent).
   */
  receive(terminalId: string, report: R, sequenced?: Sequenced): Promise<void> {
    if (this.closed) return Promise.resolve();
    return this.enqueue(terminalId, () =>
      sequenced ? this.take(terminalId, report, sequenced) : this.options.apply(terminalId, report),
    );
  }

  /** Drops what is held (unacknowledged) and waits for the reports being applied. */
  async close(): Promise<void> {
    this.closed = true;
    this.unwatch();
    for (const held of this.held.values()) {
      for (const entry of held.values()) this.timers.clearTimeout(entry.timer);
    }
    this.held.clear();
    await Promise.all(this.queues.values());
  }

  private enqueue(terminalId: string, work: () => Promise<void>): Promise<void> {
    const previous = this.queues.get(terminalId) ?? Promise.resolve();
    const next = previous.then(work).catch((error: unknown) => {
      this.options.logger.error({ err: error, terminalId }, 'report not applied');
    });
    this.queues.set(terminalId, next);
    void next.then(() => {
      if (this.queues.get(terminalId) === next) this.queues.delete(terminalId);
    });
    return next;
  }

  private async take(terminalId: string, report: R, sequenced: Sequenced): Promise<void> {
    const last = this.applied.get(terminalId);
    if (last && checkReport(last, sequenced.position) === 'duplicate') {
      this.options.onOutcome?.('duplicate');
      sequenced.acknowledge();
      return;
    }
    if ((await this.tryApply(terminalId, report, sequenced.position)) === 'gap') {
      this.hold(terminalId, report, sequenced);
      return;
    }
    sequenced.acknowledge();
    await this.applyHeld(terminalId);
  }

  /** Applies a report unless the store finds it out of order; a duplicate counts as done. */
  private async tryApply(terminalId: string, report: R, position: ReportPosition) {
    try {
      await this.options.apply(terminalId, report, position);
    } catch (error) {
      if (!(error instanceof ReportOutOfOrder)) throw error;
      if (error.reason === 'duplicate') this.options.onOutcome?.('duplicate');
      return error.reason;
    }
    this.applied.set(terminalId, position);
    this.options.onOutcome?.('applied');
    return 'applied';
  }

  /** Held unacknowledged while the terminal's later reports go on; a re-sent one replaces it. */
  private hold(terminalId: string, report: R, sequenced: Sequenced): void {
    if (this.closed) return;
    const { seq } = sequenced.position;
    const held = this.held.get(terminalId) ?? new Map<number, Held<R>>();
    const previous = held.get(seq);
    if (!previous && held.size >= this.maxHeld) return this.drop(terminalId, sequenced.position);
    this.timers.clearTimeout(previous?.timer);
    const timer = this.timers.setTimeout(
      () => {
        if (held.get(seq)?.timer !== timer) return;
        held.delete(seq);
        if (held.size === 0 && this.held.get(terminalId) === held) this.held.delete(terminalId);
        this.drop(terminalId, sequenced.position);
      },
      this.holdMs,
      { unref: true },
    );
    held.set(seq, { report, sequenced, timer });
    this.held.set(terminalId, held);
  }

  private drop(terminalId: string, position: ReportPosition): void {
    this.options.onOutcome?.('gap');
    this.dropWarnings.warn(
      'gap',
      { terminalId, ...position },
      'report ahead of a missing one: left for the agent to send again',
    );
  }

  /** Applies held reports whose predecessor has been applied since, in seq order. */
  private async applyHeld(terminalId: string): Promise<void> {
    for (;;) {
      const held = this.held.get(terminalId);
      if (!held) return;
      let progressed = false;
      for (const seq of [...held.keys()].sort((a, b) => a - b)) {
        const entry = held.get(seq);
        if (!entry) continue; // dropped (timed out) meanwhile
        const outcome = await this.tryApply(terminalId, entry.report, entry.sequenced.position);
        if (outcome === 'gap') continue;
        this.timers.clearTimeout(entry.timer);
        held.delete(seq);
        entry.sequenced.acknowledge();
        progressed = true;
      }
      if (held.size === 0 && this.held.get(terminalId) === held) this.held.delete(terminalId);
      if (!progressed) return;
    }
  }
}
