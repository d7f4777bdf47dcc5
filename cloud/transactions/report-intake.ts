/**
 * What terminals report, applied: a status or an end-of-day to the terminal, a phase of a
 * transaction through the state machine, a transaction its agent decides as a mirror
 * (mirror.ts), an agent's refusal to the request waiting for it (agent-decided.ts). With
 * its position in the agent's outbox, the position is recorded in the same commit as the
 * change, or the store refuses the report with ReportOutOfOrder and nothing changes (the
 * report inbox decides what then).
 */
import type { Logger } from 'pino';
import type { LocalTransactionReport, TerminalReport, Transaction } from '../../protocol/index.js';
import { decideMirror } from '../../protocol/transaction-rules/mirror.js';
import { decideReport, type DecisionEnv } from '../../protocol/transaction-rules/state-machine.js';
import type { ReportPosition } from '../delivery/report-order.js';
import type { EventFeed } from '../events/event-feed.js';
import { newEventId } from '../ids.js';
import type { ChangeKey, Store } from '../store/store.js';
import { UnchangedStatus } from '../terminals/unchanged-status.js';
import type { AgentDecisions } from './agent-decided.js';
import type { Decide } from './change.js';
import { publishReportTaken } from './diagnostics.js';

export interface ReportIntakeDeps {
  store: Store;
  events: EventFeed;
  logger: Logger;
  agentDecisions: AgentDecisions;
  /** The transaction service's change: the decision, its commit, and what follows it. */
  change<R>(key: ChangeKey, decide: Decide<R>): Promise<R>;
  /** A transaction's terminal and external id, by its id. */
  keyOf(transactionId: string): Promise<{ terminalId: string; externalId: string } | undefined>;
  env(): DecisionEnv;
  /** Reports may reach other relays too: every position is committed (no UnchangedStatus). */
  reportsShared: boolean;
}

export class ReportIntake {
  /** Heartbeats that change nothing, taken without a commit (one relay only). */
  private readonly unchangedStatus: UnchangedStatus | undefined;

  constructor(private readonly deps: ReportIntakeDeps) {
    this.unchangedStatus = deps.reportsShared ? undefined : new UnchangedStatus(deps.store);
  }

  /** The position to commit with a report (see UnchangedStatus.forStore). */
  private forStore(terminalId: string, position: ReportPosition): Promise<ReportPosition> {
    return this.unchangedStatus?.forStore(terminalId, position) ?? Promise.resolve(position);
  }

  /** Applies one report (see the module's comment). */
  async apply(
    terminalId: string,
    report: TerminalReport,
    position?: ReportPosition,
  ): Promise<void> {
    publishReportTaken(terminalId, report);
    if (report.type === 'status') {
      if (position && (await this.unchangedStatus?.take(terminalId, report.readings, position))) {
        return;
      }
      const event = await this.deps.store.updateTerminalStatus(
        terminalId,
        report.readings,
        report.at,
        newEventId(),
        position && (await this.forStore(terminalId, position)),
      );
      if (event) this.deps.events.publish([event]);
      return;
    }
    if (report.type === 'settlement') {
      const event = await this.deps.store.appendSettlement(
        terminalId,
        report.settlement,
        newEventId(),
        position && (await this.forStore(terminalId, position)),
      );
      if (event) this.deps.events.publish([event]);
      return;
    }
    if (report.type === 'local_transaction') {
      return this.applyLocalTransaction(terminalId, report.transaction, position, report.answers);
    }
    if (report.type === 'command_refused') {
      this.deps.agentDecisions.answer(report.command_id, { error: report.error });
      return this.recordOnly(terminalId, position);
    }
    const key = await this.deps.keyOf(report.transaction_id);
    if (!key || key.terminalId !== terminalId) {
      this.deps.logger.warn(
        { terminalId, transactionId: report.transaction_id },
        'report for an unknown transaction',
      );
      return this.recordOnly(terminalId, position);
    }
    const stored = position && (await this.forStore(terminalId, position));
    await this.deps.change(
      { terminalId, externalId: key.externalId, ...(stored ? { report: stored } : {}) },
      decideReport(report, this.deps.env()),
    );
  }

  /** A transaction the terminal's agent decides, kept as it reports it (mirror.ts). */
  private async applyLocalTransaction(
    terminalId: string,
    reported: Transaction,
    position?: ReportPosition,
    answers?: LocalTransactionReport['answers'],
  ): Promise<void> {
    if (reported.terminal_id !== terminalId) {
      this.deps.logger.warn(
        { terminalId, transactionId: reported.id },
        'local transaction of another terminal: not applied',
      );
      return this.recordOnly(terminalId, position);
    }
    const stored = position && (await this.forStore(terminalId, position));
    const { mismatch, record } = await this.deps.change(
      { terminalId, externalId: reported.external_id, ...(stored ? { report: stored } : {}) },
      decideMirror(reported),
    );
    if (answers) {
      this.deps.agentDecisions.answer(
        answers.command_id,
        answers.error && !mismatch
          ? { error: answers.error }
          : { record: mismatch ? undefined : record },
      );
    }
    if (mismatch) {
      this.deps.logger.error(
        { terminalId, externalId: reported.external_id, kept: record?.txn.id, mismatch },
        'local transaction mismatch: the pair is another transaction here; not applied',
      );
    }
  }

  /** A report that changes nothing else: only its position is recorded, if it has one. */
  private async recordOnly(terminalId: string, position: ReportPosition | undefined) {
    if (position) {
      await this.deps.store.recordReport(terminalId, await this.forStore(terminalId, position));
    }
  }
}
