/**
 * The order of an agent's reports (docs/mqtt.md): each names its place in the agent's
 * outbox, and applies once and only after the report sent before it. The report inbox
 * (inbox.ts) keeps to it in memory; the store keeps to it for good, recording a report's
 * position in the same commit as the change it makes, which is what makes "once" hold
 * when several relays share the agents' traffic.
 */

/** Where a report stands in its agent's outbox (docs/mqtt.md). */
export interface ReportPosition {
  journal: string;
  seq: number;
  /** The report that must be applied before this one (0 or absent: none). */
  prev?: number;
}

/**
 * A report the store did not apply: one applied before (`duplicate`), or one that arrived
 * ahead of an earlier one still missing (`gap`: with several relays sharing the agents'
 * traffic, the earlier one may still be on its way through another).
 */
export class ReportOutOfOrder extends Error {
  constructor(readonly reason: 'duplicate' | 'gap') {
    super(`report ${reason}`);
  }
}

/**
 * Where a report at `position` stands after `last`: within one journal each seq applies
 * once, and only after the report the agent sent before it; a new journal (a wiped
 * agent) starts from nothing.
 */
export function checkReport(
  last: { journal: string | undefined; seq: number },
  position: ReportPosition,
): 'apply' | ReportOutOfOrder['reason'] {
  const applied = last.journal === position.journal ? last.seq : 0;
  if (position.seq <= applied) return 'duplicate';
  return (position.prev ?? 0) <= applied ? 'apply' : 'gap';
}
