/**
 * Heartbeats that change nothing are not committed (docs/mqtt.md, "Heartbeats").
 *
 * An agent sends its status every period (30 s by default) whether or not anything
 * changed: that is how the relay hears it is alive. A status whose readings are those the
 * store holds changes no state; the only thing a commit would keep is its sequence
 * number, and nothing needs it kept: redelivered after a restart, the same report applies
 * again as the no-op it was. So such a report is checked in order against the store (a
 * read), acknowledged, and remembered here, in memory only.
 *
 * What is remembered matters for the agent's next report, whose `prev` may name the
 * heartbeat: it was applied (as nothing), and every report before it was applied for good,
 * so `prev` is met. The store, which saw only the reports that changed something, is given
 * the position with `prev` moved back to what it holds. This holds only while the store's
 * last report for the terminal is still the one seen when the heartbeat was remembered;
 * once another relay commits one, the memory is dropped, and the store's own check rules.
 * Used by a relay alone on its broker only: with relays sharing the agents' traffic, the
 * next report may reach a relay that cannot see this memory (TransactionService).
 */
import type { TerminalReadings } from '../../protocol/index.js';
import { BoundedMap } from '../../common/bounded-map.js';
import { ReportOutOfOrder, checkReport, type ReportPosition } from '../delivery/report-order.js';
import type { Store } from '../store/store.js';

interface Remembered {
  /** The heartbeat taken without a commit. */
  journal: string;
  seq: number;
  /** The store's last report then. */
  stored: { journal: string | undefined; seq: number };
}

/** At most this many terminals remembered (one entry each): a bound, not a cache size. */
const MAX_TERMINALS = 100_000;

export class UnchangedStatus {
  private readonly remembered = new BoundedMap<string, Remembered>(MAX_TERMINALS);

  constructor(private readonly store: Pick<Store, 'statusAndLastReport' | 'lastReport'>) {}

  /**
   * Takes a status report without a commit when it changes nothing and is next in line:
   * answers true (it may be acknowledged); throws ReportOutOfOrder for such a report that
   * is a duplicate or a gap, as the store would. Answers false when it must be written (it
   * changes a reading, or the terminal is unknown): the store then checks its order.
   */
  async take(terminalId: string, readings: TerminalReadings, position: ReportPosition) {
    // A report that changes a reading is written, and the store checks its order in the
    // same commit: only an unchanged one's order is checked here. One read for both, as
    // every heartbeat of the fleet pays for it.
    const current = await this.store.statusAndLastReport(terminalId);
    if (!current || changes(current.status, readings)) return false;
    const stored = current.lastReport;
    const verdict = checkReport(this.last(terminalId, stored), position);
    if (verdict !== 'apply') throw new ReportOutOfOrder(verdict);
    this.remembered.set(terminalId, { journal: position.journal, seq: position.seq, stored });
    return true;
  }

  /**
   * The position to hand the store for a report that is written: `prev` met by a heartbeat
   * taken here is moved back to the store's last report.
   */
  async forStore(terminalId: string, position: ReportPosition): Promise<ReportPosition> {
    const remembered = this.remembered.get(terminalId);
    if (!remembered) return position;
    // Kept until the store's last report moves: a write that fails leaves it valid.
    const stored = await this.store.lastReport(terminalId);
    const prev = position.prev ?? 0;
    if (
      !sameReport(remembered.stored, stored) ||
      remembered.journal !== position.journal ||
      prev <= (stored.journal === position.journal ? stored.seq : 0) ||
      prev > remembered.seq
    ) {
      return position;
    }
    return { ...position, prev: stored.journal === position.journal ? stored.seq : 0 };
  }

  /** The newest report taken for the terminal: a remembered heartbeat, if still current. */
  private last(terminalId: string, stored: { journal: string | undefined; seq: number }) {
    const remembered = this.remembered.get(terminalId);
    if (!remembered) return stored;
    if (!sameReport(remembered.stored, stored)) {
      this.remembered.delete(terminalId);
      return stored;
    }
    return { journal: remembered.journal, seq: remembered.seq };
  }
}

function sameReport(
  a: { journal: string | undefined; seq: number },
  b: { journal: string | undefined; seq: number },
) {
  return a.journal === b.journal && a.seq === b.seq;
}

/** Whether merging `readings` into `status` changes it (as the stores decide). */
function changes(status: TerminalReadings, readings: TerminalReadings): boolean {
  return Object.entries(readings).some(
    ([key, value]) => status[key as keyof TerminalReadings] !== value,
  );
}
