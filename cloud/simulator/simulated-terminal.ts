/**
 * One simulated terminal: the emulated card reader's scenarios (firmware-bridge) played
 * with timers, reporting as a real terminal would. It keeps no journal: it acknowledges a
 * start or continue only once it has reported where that led, so after a relay crash the
 * re-sent command replays it, and a command for a transaction it no longer knows is
 * answered with CANCELLED (it will not charge).
 */
import type { Logger } from 'pino';
import type {
  StartTransactionCommand,
  TerminalCommand,
  TerminalReadings,
  TerminalReport,
} from '../../protocol/index.js';
import {
  scenarioAfterContinue,
  scenarioFor,
  type Scenario,
  type ScenarioDelay,
} from '../../firmware-bridge/emulator/scenarios.js';
import {
  decideCancel,
  decideContinue,
  decideStart,
  type KnownTransaction,
} from '../../agent/command-rules.js';
import { CANCELLED_BEFORE_START, EXPIRED, NEVER_RAN } from '../../agent/reports.js';
import type { Clock } from '../../common/clock.js';
import { noEndOfDay } from '../../protocol/settlement.js';
import type { ReaderOutcome } from './fleet.js';

type Phase = 'RUNNING' | 'PAUSED' | 'DONE';

interface Run {
  transactionId: string;
  /** The start it runs; let go once the run is done, which keeps only its result. */
  command: StartTransactionCommand | undefined;
  sequence: number;
  phase: Phase;
  result?: string;
  timer?: NodeJS.Timeout;
  /** Acknowledgements owed once this run reports its next step. */
  owedAcks: Array<() => void>;
}

export interface SimulatedTerminalOptions {
  terminalId: string;
  delayMs: number;
  clock: Clock;
  logger: Logger;
  report: (report: TerminalReport) => Promise<void>;
}

/**
 * Finished transactions a terminal remembers, oldest forgotten first: a reversal asked
 * within the grace period or a start sent again finds its run at any real pace, and a
 * terminal under a load test does not grow without end.
 */
const REMEMBERED_RUNS = 1_000;

export class SimulatedTerminal {
  /** Every run still going and the last REMEMBERED_RUNS done, in the order they finished. */
  private readonly runs = new Map<string, Run>();
  private sequence = 0;
  private readonly serial: number;
  /** Print jobs received (sizes in bytes), for tests and the bench. */
  readonly printed: number[] = [];

  constructor(private readonly options: SimulatedTerminalOptions) {
    this.serial = Number(options.terminalId.replace(/\D/g, '').slice(-8) || '0');
  }

  handle(command: TerminalCommand): Promise<void> {
    switch (command.type) {
      case 'transaction.start':
        return this.start(command);
      case 'transaction.continue':
        return this.continue(command.transaction_id, command.requested_amount);
      case 'transaction.cancel':
        return this.cancel(command.transaction_id);
      case 'transaction.confirm':
      case 'transaction.continue_request':
        // Only an agent in local mode decides these; an in-process simulated terminal has none.
        return Promise.resolve();
      case 'print':
        this.printed.push(Buffer.byteLength(command.contents, 'base64'));
        return Promise.resolve();
      case 'terminal.end_of_day':
        // The simulated native reader has no batch to close.
        return this.options.report({
          type: 'settlement',
          settlement: noEndOfDay('ON_DEMAND', this.options.clock.now().toISOString()),
        });
    }
  }

  private start(command: StartTransactionCommand): Promise<void> {
    const existing = this.runs.get(command.transaction_id);
    switch (decideStart(existing && known(existing), command, this.options.clock.now())) {
      case 'known':
        return existing!.phase === 'RUNNING' ? this.owe(existing!) : Promise.resolve();
      case 'expired':
        return this.refuseExpired(command);
      case 'run':
        break;
    }
    this.sequence += 1;
    const run: Run = {
      transactionId: command.transaction_id,
      command,
      sequence: this.sequence,
      phase: 'RUNNING',
      owedAcks: [],
    };
    this.runs.set(command.transaction_id, run);
    const scenario = scenarioFor(command, this.context(run));
    const acked = this.owe(run);
    void this.status({ transaction_state: 'PROCESSING', screen_message: 'Present card' });
    this.after(run, scenario.delay, () =>
      scenario.pause ? this.pauseAt(run, scenario) : this.complete(run, scenario),
    );
    return acked;
  }

  private continue(transactionId: string, requestedAmount: number | undefined): Promise<void> {
    const run = this.runs.get(transactionId);
    if (!run) return this.forget(transactionId);
    if (decideContinue(known(run)) === 'ignore' || !run.command) {
      return run.phase === 'RUNNING' ? this.owe(run) : Promise.resolve();
    }
    run.phase = 'RUNNING';
    const scenario = scenarioAfterContinue(run.command, this.context(run), requestedAmount);
    const acked = this.owe(run);
    void this.status({ transaction_state: 'PROCESSING', screen_message: 'Processing' });
    this.after(run, { kind: 'normal' }, () => this.complete(run, scenario));
    return acked;
  }

  private async cancel(transactionId: string): Promise<void> {
    const run = this.runs.get(transactionId);
    switch (decideCancel(run && known(run))) {
      case 'refuse-later':
        this.remember(transactionId, 'STOPPED');
        return;
      case 'reverse':
        run!.result = 'REVERSED';
        this.options.logger.info({ transactionId }, 'payment reversed');
        return;
      case 'nothing':
        return;
      case 'drop':
      case 'stop':
        break;
    }
    clearTimeout(run!.timer);
    this.finish(run!, 'STOPPED');
    await this.options.report({
      type: 'transaction',
      transaction_id: transactionId,
      phase: 'CANCELLED',
      result_code: CANCELLED_BEFORE_START.result_code,
      result_description: 'Cancelled by the register',
    });
    this.settle(run!);
    await this.status({ transaction_state: 'READY', screen_message: 'Cancelled' });
  }

  /** A start after its expiry is refused, as an agent refuses it: it will never charge. */
  private async refuseExpired(command: StartTransactionCommand): Promise<void> {
    this.remember(command.transaction_id, EXPIRED.result_code);
    await this.options.report({
      type: 'transaction',
      transaction_id: command.transaction_id,
      phase: 'CANCELLED',
      ...EXPIRED,
    });
  }

  /** A transaction that ended without ever running, remembered so a late start is refused. */
  private remember(transactionId: string, result: string): void {
    const run: Run = {
      transactionId,
      command: undefined,
      // It never reached the reader: it takes no number in the reader's sequence.
      sequence: 0,
      phase: 'DONE',
      owedAcks: [],
    };
    this.finish(run, result);
  }

  /** A command for a transaction this terminal has no record of: it will never charge. */
  private async forget(transactionId: string): Promise<void> {
    await this.options.report({
      type: 'transaction',
      transaction_id: transactionId,
      phase: 'CANCELLED',
      ...NEVER_RAN,
    });
  }

  private async pauseAt(run: Run, scenario: Scenario): Promise<void> {
    run.phase = 'PAUSED';
    await this.options.report({
      type: 'transaction',
      transaction_id: run.transactionId,
      phase: 'CUSTOMER_IDENTIFIED',
      ...(scenario.customerIdentity
        ? { details: { customer_identity: scenario.customerIdentity } }
        : {}),
    });
    this.settle(run);
    await this.status({ transaction_state: 'AWAITING_CONTINUE', screen_message: 'Please wait' });
  }

  private async complete(run: Run, scenario: Scenario): Promise<void> {
    this.finish(run, scenario.result_code);
    await this.options.report({
      type: 'transaction',
      transaction_id: run.transactionId,
      phase: 'COMPLETED',
      result_code: scenario.result_code,
      ...(scenario.result_description ? { result_description: scenario.result_description } : {}),
      details: scenario.details,
    });
    this.settle(run);
    const approved = scenario.result_code === 'SUCCESS';
    await this.status({
      transaction_state: 'READY',
      screen_message: approved ? 'Approved' : 'Not approved',
    });
  }

  private finish(run: Run, result: string): void {
    run.phase = 'DONE';
    run.result = result;
    run.command = undefined;
    // Newest last, so that the oldest finished runs are the first forgotten.
    this.runs.delete(run.transactionId);
    this.runs.set(run.transactionId, run);
    for (const [id, old] of this.runs) {
      if (this.runs.size <= REMEMBERED_RUNS) break;
      if (old.phase === 'DONE' && old.owedAcks.length === 0) this.runs.delete(id);
    }
  }

  private owe(run: Run): Promise<void> {
    return new Promise((resolve) => run.owedAcks.push(resolve));
  }

  private settle(run: Run): void {
    for (const ack of run.owedAcks.splice(0)) ack();
  }

  private after(run: Run, delay: ScenarioDelay, step: () => Promise<void>): void {
    const ms =
      delay.kind === 'instant' ? 0 : delay.kind === 'fixed' ? delay.ms : this.options.delayMs;
    run.timer = setTimeout(() => {
      run.timer = undefined;
      step().catch((error: unknown) =>
        this.options.logger.error({ err: error }, 'simulated terminal step failed'),
      );
    }, ms);
  }

  private context(run: Run) {
    return { terminalSerial: this.serial, sequence: run.sequence, now: this.options.clock.now() };
  }

  private status(readings: TerminalReadings): Promise<void> {
    return this.options.report({
      type: 'status',
      at: this.options.clock.now().toISOString(),
      readings,
    });
  }

  outcomes(): Map<string, ReaderOutcome> {
    const outcomes = new Map<string, ReaderOutcome>();
    for (const [id, run] of this.runs) {
      outcomes.set(
        id,
        run.phase === 'RUNNING'
          ? 'RUNNING'
          : run.phase === 'PAUSED'
            ? 'PAUSED'
            : run.result === 'SUCCESS'
              ? 'CHARGED'
              : run.result === 'STOPPED' || run.result === 'REVERSED'
                ? run.result
                : run.result === 'EXPIRED'
                  ? 'STOPPED'
                  : 'DECLINED',
      );
    }
    return outcomes;
  }

  close(): void {
    for (const run of this.runs.values()) clearTimeout(run.timer);
  }
}

/** A run as the agent's command rules see a transaction (agent/command-rules.ts). */
function known(run: Run): KnownTransaction {
  switch (run.phase) {
    case 'RUNNING':
      return { state: 'RUNNING' };
    case 'PAUSED':
      return { state: 'PAUSED' };
    case 'DONE':
      // Stopped, reversed or refused: it ended without a charge.
      return run.result === 'STOPPED' || run.result === 'REVERSED' || run.result === 'EXPIRED'
        ? { state: 'CANCELLED' }
        : { state: 'COMPLETED', result: { result_code: run.result } };
  }
}
