/**
 * The POS's confirms and continues for a terminal in local mode, which its agent decides
 * (docs/local-mode.md, "The cloud path"): each becomes a command with the POS's request
 * and an `expires_at` at the end of the wait, and the answer is the agent's decision if
 * its report comes back within the wait, else OUTCOME_UNKNOWN (the POS repeats it, here
 * or on the terminal's local API; the agent refuses the command once it has expired).
 */
import { systemTimers, type Clock, type Timers } from '../../common/clock.js';
import type { AgentDecidedCommand, ConfirmRequest, ContinueRequest } from '../../protocol/index.js';
import { ERROR_CATALOGUE, type ErrorCode } from '../../protocol/errors.js';
import { pairTransactionId } from '../../protocol/transaction-rules/pair-id.js';
import { decideConfirm, type DecisionEnv } from '../../protocol/transaction-rules/state-machine.js';
import type { Principal } from '../accounts/principal.js';
import type { Cancellation } from '../cancellation.js';
import { ApiError } from '../errors.js';
import { newCommandId } from '../ids.js';
import type { TransactionRecord } from '../store/records.js';
import type { ChangeFeed } from './change-feed.js';

/** The agent's answer to one command: its record, or its refusal. */
export type AgentAnswer =
  | { record: TransactionRecord | undefined; error?: undefined }
  | { error: { code: string; description: string } };

export type AgentDecidedRequest =
  | { type: 'transaction.confirm'; request: ConfirmRequest }
  | { type: 'transaction.continue_request'; request: ContinueRequest };

export interface AgentDecisionsDeps {
  clock: Clock;
  timers?: Timers;
  feed: ChangeFeed;
  /** The relay's record of a pair (the command names its id; a pair never seen, its pair id). */
  read(terminalId: string, externalId: string): Promise<TransactionRecord | undefined>;
  /** Commits the command, so the outbox delivers it; nothing about the transaction changes. */
  send(terminalId: string, externalId: string, command: AgentDecidedCommand): Promise<void>;
  /** Cancelled at shutdown: every wait ends, answered OUTCOME_UNKNOWN. */
  closing: Cancellation;
  env(): DecisionEnv;
}

export class AgentDecisions {
  /** Commands sent, waiting here for the report that answers them, by command id. */
  private readonly awaited = new Map<string, (answer: AgentAnswer | undefined) => void>();

  constructor(private readonly deps: AgentDecisionsDeps) {}

  /** Sends the request to the terminal's agent and answers its decision (see above). */
  async ask(
    principal: Principal,
    asked: AgentDecidedRequest,
    waitMs: number,
    gone: Cancellation,
  ): Promise<TransactionRecord> {
    const { clock, feed, closing } = this.deps;
    const { terminal_id: terminalId, external_id: externalId } = asked.request;
    const known = await this.deps.read(terminalId, externalId);
    const command = {
      ...asked,
      command_id: newCommandId(),
      transaction_id: known?.txn.id ?? pairTransactionId(terminalId, externalId),
      expires_at: new Date(clock.now().getTime() + waitMs).toISOString(),
    } as AgentDecidedCommand;
    const what = asked.type === 'transaction.confirm' ? 'confirm' : 'continue';
    const unknown = () =>
      new ApiError(
        'OUTCOME_UNKNOWN',
        `terminal ${terminalId} decides this ${what} in local mode and did not answer in time; repeat it, here or on the terminal's local API`,
      );
    if (waitMs <= 0 || gone.cancelled || closing.cancelled) throw unknown();
    const timers = this.deps.timers ?? systemTimers;
    // Listening before the command exists: the answer may come back before the commit returns.
    const answered = new Promise<AgentAnswer | undefined>((resolve) => {
      // With several relays the answering report may reach another one: a newer record
      // on which the rules would change nothing is the agent's decision too.
      const unsubscribe = feed.subscribe(terminalId, externalId, (record) => {
        if (record.version > (known?.version ?? 0) && this.settles(asked, record, known)) {
          done({ record });
        }
      });
      const timer = timers.setTimeout(() => done(undefined), waitMs);
      const stop = () => done(undefined);
      const done = (answer: AgentAnswer | undefined) => {
        timers.clearTimeout(timer);
        unsubscribe();
        this.awaited.delete(command.command_id);
        gone.remove(stop);
        closing.remove(stop);
        resolve(answer);
      };
      gone.add(stop);
      closing.add(stop);
      this.awaited.set(command.command_id, done);
    });
    try {
      await this.deps.send(terminalId, externalId, command);
    } catch (error) {
      this.awaited.get(command.command_id)?.(undefined);
      throw error;
    }
    const answer = await answered;
    if (!answer) throw unknown();
    if (answer.error) {
      const code =
        answer.error.code in ERROR_CATALOGUE ? (answer.error.code as ErrorCode) : 'INVALID_STATE';
      throw new ApiError(code, answer.error.description);
    }
    if (!answer.record || answer.record.accountId !== principal.accountId) throw unknown();
    return answer.record;
  }

  /** The agent's answer to a command of this relay (a `local_transaction` report's `answers`). */
  answer(commandId: string, answer: AgentAnswer): void {
    this.awaited.get(commandId)?.(answer);
  }

  /** Whether `record` already holds what was asked: the rules would change nothing. */
  private settles(
    asked: AgentDecidedRequest,
    record: TransactionRecord,
    known: TransactionRecord | undefined,
  ): boolean {
    if (asked.type === 'transaction.continue_request') {
      // A continue is not repeatable (the rules refuse it once continued): taken once the
      // pause is over with the amount asked.
      const amount = asked.request.requested_amount;
      return (
        known?.txn.state === 'AWAITING_CONTINUE' &&
        record.txn.state !== 'AWAITING_CONTINUE' &&
        (amount === undefined || record.txn.requested_amount === amount)
      );
    }
    try {
      const decision = decideConfirm(
        asked.request,
        record.accountId,
        this.deps.env(),
      )({
        terminalOwner: record.accountId,
        current: record,
        active: undefined,
        unconfirmedCount: 0,
      });
      return decision.write === undefined;
    } catch {
      return false;
    }
  }
}
