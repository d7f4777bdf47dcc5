/**
 * The agent's card-reader port (reader/card-reader.ts) over a ZVT payment terminal, on any
 * ApduChannel (serial framing or TCP: connect.ts).
 *
 * ```
 *   start PURCHASE / REFUND ─▶ record IN_PROGRESS (stateFile) ─▶ 06 01 / 06 31 ─▶ PT
 *     04 FF ─▶ 'progress' screen_text + 'status' screen_message
 *     04 0F, 06 D1 / 06 D3, 06 0F | 06 1E ─▶ record final ─▶ 'result'
 *   cancel ─▶ 06 B0            reverse ─▶ 06 30 by the PT's receipt number
 *   status() ─▶ 05 01          lastTransaction() ─▶ the record; after a crash, 06 20 first
 * ```
 *
 * ZVT has no transaction ids, so the driver keeps its own durable record (driver-state.ts)
 * written before each command leaves. A start, cancel or reverse for an id it knows is
 * answered from the record, never run again. A record still IN_PROGRESS that no command of
 * this driver is running (the agent died mid-payment) is settled from the terminal before
 * anything is reported: Repeat Receipt (06 20, service 01) sends the PT's last 04 0F again;
 * it is this transaction's exactly when its trace number differs from the one recorded
 * before the command left. A busy PT (84 83, 84 9C) is asked again on the next question.
 *
 * What ZVT cannot do is refused with a clear result, never faked (capabilities): the pause
 * at customer identification, an account check, cashback.
 */
import { EventEmitter } from 'node:events';
import {
  sleep,
  systemClock,
  systemTimers,
  type Clock,
  type Timers,
} from '../../../common/clock.js';
import type { ReaderCapabilities } from '../../../protocol/reader-capabilities.js';
import type {
  CardReader,
  CardReaderEvents,
  LastTransactionRecord,
  ReaderStart,
  ReaderStatus,
} from '../../reader/card-reader.js';
import {
  authorisation,
  DEFAULT_PASSWORD,
  displayText,
  endOfDay,
  refund,
  REPEAT_RECEIPT,
  repeatReceipt,
  reversal,
  statusEnquiry,
} from '../command-builders.js';
import { ZvtError } from '../errors.js';
import type { EcrCommand, IntermediateStatus } from '../message-types.js';
import { ZvtSession, type ZvtOutcome } from '../session.js';
import { ZvtDriverState, type ZvtDriverRecord } from './driver-state.js';
import { withCharset, zvtProfile, type ZvtProfile } from './profiles.js';
import type { ZvtReaderLogger, ZvtReaderOptions } from './reader-options.js';
import { refusalOfStart, registrationFor, screenTextOf } from './reader-commands.js';
import { lastRecordOf, linkError, resultOf, zvtCapabilities } from './reader-port.js';
import { resultOfCode, terminalStatusText } from './result-codes.js';
import {
  BUSY,
  CANCELLED_BY_REGISTER,
  finalRecord,
  isBusyRefusal,
  NOT_STARTED,
  recordFromOutcome,
  recordFromRepeatReceipt,
  REVERSED,
  UNKNOWN_TRANSACTION,
} from './transaction-outcome.js';

export type { ZvtReaderLogger, ZvtReaderOptions } from './reader-options.js';

const SCREEN_READY = 'Ready';
const NOTHING = { details: { authorized_amount: 0 } };
/** 84 6B: function deactivated, the PT is not registered. */
const ZVT_NOT_REGISTERED = 0x6b;
/** Terminal status and result code F0: the PT needs an end-of-day (zvt-notes §6.1, §6.3). */
const ZVT_END_OF_DAY_REQUIRED = 0xf0;

export class ZvtCardReader extends EventEmitter<CardReaderEvents> implements CardReader {
  readonly capabilities: ReaderCapabilities;
  readonly profile: ZvtProfile;
  readonly session: ZvtSession;
  readonly state: ZvtDriverState;
  private readonly password: string;
  private readonly currency: string;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly t3Ms: number;
  private readonly logger?: ZvtReaderLogger;
  /** Commands to the PT, one at a time. */
  private queue: Promise<unknown> = Promise.resolve();
  /** The transaction whose command runs now. */
  private active: string | undefined;
  private screen = SCREEN_READY;
  private registered = false;
  /** The PT's software version from its last status enquiry that carried one. */
  softwareVersion: string | undefined;
  private readonly onSoftwareVersion: ((version: string) => void) | undefined;
  private readonly onEndOfDayRequired: (() => void) | undefined;

  constructor(options: ZvtReaderOptions) {
    super();
    this.profile = withCharset(zvtProfile(options.profile), options.charset);
    this.capabilities = zvtCapabilities(this.profile);
    this.password = options.password ?? DEFAULT_PASSWORD;
    this.currency = (options.currency ?? 'EUR').toUpperCase();
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger;
    this.timers = options.timers ?? systemTimers;
    this.t3Ms = options.t3Ms ?? 5000;
    this.onSoftwareVersion = options.onSoftwareVersion;
    this.onEndOfDayRequired = options.onEndOfDayRequired;
    this.state = new ZvtDriverState(options.stateFile);
    this.session = new ZvtSession(options.channel, {
      t3Ms: this.t3Ms,
      t4Ms: options.t4Ms,
      timers: this.timers,
      endOnErrorStatusInformation: this.profile.endsOnErrorStatusInformation,
      ...(options.limits ? { limits: options.limits } : {}),
    });
    this.session.on('intermediate-status', this.onIntermediateStatus);
    this.session.once('close', this.onClose);
    this.session.on('unexpected', ({ apdu, reason }) => {
      this.lastUnexpectedAt = this.clock.now().getTime();
      this.logger?.warn('ZVT message outside the protocol', {
        reason,
        apdu: apdu.subarray(0, 32).toString('hex'),
      });
    });
  }

  /**
   * When the PT last sent something outside a command: it still finishes what it did for a
   * register that died (its 04 0F, print lines, 06 0F, each retried until T3). Its stale
   * 06 0F would end a question asked now as if answered, so recovery waits until it is quiet.
   * A terminal gives a dead register up after its retries; one that never goes quiet is
   * waited for one command's time at most, then the line is dropped (a new one is quiet).
   */
  private lastUnexpectedAt: number | undefined;

  private async untilTerminalQuiet(): Promise<void> {
    const since = this.clock.now().getTime();
    const { maxCommandMs } = this.session.limits;
    for (;;) {
      if (this.lastUnexpectedAt === undefined) return;
      const now = this.clock.now().getTime();
      const quietFor = now - this.lastUnexpectedAt;
      if (quietFor >= 2 * this.t3Ms) return;
      if (now - since >= maxCommandMs) {
        const what = `the terminal was not quiet for ${2 * this.t3Ms} ms within ${maxCommandMs} ms`;
        this.session.dropLine(what);
        throw new ZvtError('LIMIT_EXCEEDED', `${what}; the line was dropped`);
      }
      await sleep(
        Math.min(2 * this.t3Ms - quietFor, since + maxCommandMs - now),
        undefined,
        this.timers,
      );
    }
  }

  /**
   * Registers with the PT (06 00) and, when the driver has never seen the PT's trace
   * numbers, learns its last one (06 20 service 01+02: the 04 0F again, no receipt). A
   * busy PT is left for later: the next command registers first.
   */
  async open(): Promise<void> {
    await this.exclusive(async () => {
      // A PT still busy with what it did before (retransmitting to a register that died)
      // may not answer within T3: not fatal, the next command registers first.
      if (!(await this.notAnswering(() => this.ensureRegistered()))) return;
      const last = this.state.last();
      if (
        this.registered &&
        this.state.lastTrace === undefined &&
        last?.phase !== 'IN_PROGRESS' &&
        this.profile.repeatReceiptStatus
      ) {
        const outcome = await this.session.run(
          repeatReceipt({
            password: this.password,
            serviceByte: REPEAT_RECEIPT.statusInformation | REPEAT_RECEIPT.noReceipt,
          }),
        );
        if (outcome.kind === 'completed') this.state.setLastTrace(outcome.result?.traceNumber ?? 0);
      }
    });
  }

  // ---- CardReader ----

  async start(command: ReaderStart): Promise<void> {
    const id = command.transaction_id;
    const existing = this.state.get(id);
    if (existing) return this.answerExisting(existing);
    const refusal = refusalOfStart(command, this.currency);
    const record: ZvtDriverRecord = {
      transaction_id: id,
      kind: command.kind,
      amount: command.requested_amount,
      currency: command.currency,
      phase: 'IN_PROGRESS',
    };
    if (refusal) {
      this.settle(finalRecord(record, 'COMPLETED', refusal, { details: { authorized_amount: 0 } }));
      return;
    }
    if (this.active !== undefined) {
      this.settle(finalRecord(record, 'CANCELLED', BUSY, { details: { authorized_amount: 0 } }));
      return;
    }
    this.active = id;
    // Known before it is queued, so a cancel meanwhile finds it; `queued`: not sent yet.
    this.state.put({ ...record, queued: true });
    const amount = command.requested_amount;
    const zvtCommand: EcrCommand =
      command.kind === 'REFUND'
        ? refund(amount, { password: this.password })
        : authorisation(amount);
    await this.runTransaction(record, zvtCommand);
  }

  /** ZVT has no pause at customer identification: there is nothing to continue. */
  async continue(transactionId: string): Promise<void> {
    const record = this.state.get(transactionId);
    if (record && record.phase !== 'IN_PROGRESS') this.emitResult(record);
    else if (!record) this.settle(this.ghost(transactionId));
  }

  async cancel(transactionId: string): Promise<void> {
    const record = this.state.get(transactionId);
    if (!record) return void this.settle(this.ghost(transactionId));
    if (record.phase !== 'IN_PROGRESS') return this.emitResult(record);
    if (this.active !== transactionId) return this.answerExisting(record);
    this.state.put({ ...record, cancel_requested: true });
    // Still queued: it will not be sent. Without 06 B0 (profile) the PT carries on; its
    // result arrives as usual.
    if (record.queued || !this.profile.abort) return;
    const running = this.session.current;
    if (running !== 'authorisation' && running !== 'refund') return;
    try {
      // Resolves when the PT answered the 06 B0; one that ignores it must not hold the
      // agent beyond T3: the payment's own end still arrives as its result.
      await Promise.race([this.session.abort(), sleep(this.t3Ms, undefined, this.timers)]);
    } catch (error) {
      throw linkError(error);
    }
  }

  async reverse(transactionId: string): Promise<void> {
    const record = this.state.get(transactionId);
    if (!record) return void this.settle(this.ghost(transactionId));
    if (record.phase === 'IN_PROGRESS' && !record.reversal_pending) {
      return this.active === transactionId
        ? this.cancel(transactionId)
        : this.answerExisting(record);
    }
    if (
      !record.reversal_pending &&
      (record.phase !== 'COMPLETED' || record.result_code !== 'SUCCESS')
    ) {
      return this.emitResult(record);
    }
    if (record.receipt_number === undefined) {
      return this.emitResult(
        record,
        'The terminal gave no receipt number: reverse it on the terminal',
      );
    }
    if (
      !record.reversal_pending &&
      this.profile.reversalOfLastOnly &&
      record.trace_number !== this.state.lastTrace
    ) {
      return this.emitResult(record, 'This terminal reverses only its last transaction');
    }
    await this.runReversal(record, record.receipt_number);
  }

  async lastTransaction(): Promise<LastTransactionRecord | undefined> {
    let record = this.state.last();
    if (!record) return undefined;
    if (record.phase === 'IN_PROGRESS' || record.reversal_pending) {
      if (this.active !== record.transaction_id) record = await this.settleFromTerminal(record);
    }
    return lastRecordOf(record);
  }

  async status(): Promise<ReaderStatus> {
    if (this.active !== undefined) return this.statusNow();
    const outcome = await this.exclusive(async () => {
      await this.ensureRegistered();
      return this.session.run(statusEnquiry({ password: this.password }));
    }).catch((error: unknown) => {
      throw linkError(error);
    });
    const terminalStatus = outcome.completion?.status?.terminalStatus;
    const version = outcome.completion?.status?.softwareVersion;
    if (version !== undefined && version !== this.softwareVersion) {
      this.softwareVersion = version;
      this.onSoftwareVersion?.(version);
    }
    if (terminalStatus === ZVT_END_OF_DAY_REQUIRED) this.onEndOfDayRequired?.();
    if (terminalStatus !== undefined) this.screen = terminalStatusText(terminalStatus);
    else if (outcome.kind === 'refused') this.screen = 'Busy';
    const status = this.statusNow();
    this.emit('status', status);
    return status;
  }

  async close(): Promise<void> {
    await this.session.close();
  }

  // ---- beyond the port: the terminal's own functions ----

  /** ISO 4217 alphabetic code registered with the PT (the currency of its totals). */
  get registeredCurrency(): string {
    return this.currency;
  }

  /** End-of-day (06 50): the outcome as the PT reported it (totals in `result`). */
  endOfDay(): Promise<ZvtOutcome> {
    return this.exclusive(async () => {
      await this.ensureRegistered();
      return this.session.run(endOfDay({ password: this.password }));
    });
  }

  /** A command refused or aborted with F0: the PT wants its end-of-day first. */
  private noteEndOfDayRequired(outcome: ZvtOutcome): void {
    if (outcome.kind !== 'completed' && outcome.resultCode === ZVT_END_OF_DAY_REQUIRED) {
      this.onEndOfDayRequired?.();
    }
  }

  /** Shows up to 8 lines on the PT (06 E0); false when the PT refused. */
  async displayText(lines: readonly string[], durationS?: number): Promise<boolean> {
    const outcome = await this.exclusive(() => this.session.run(displayText(lines, durationS)));
    return outcome.kind === 'acknowledged' || outcome.kind === 'completed';
  }

  // ---- transactions ----

  /** Records, sends, and resolves once the PT accepted; the result follows as an event. */
  private runTransaction(record: ZvtDriverRecord, command: EcrCommand): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let answered = false;
      const accepted = () => {
        answered = true;
        resolve();
      };
      const run = this.exclusive(async () => {
        await this.ensureRegistered();
        const queued = this.state.get(record.transaction_id) ?? record;
        if (queued.cancel_requested) {
          // Cancelled before it left: nothing to abort on the PT.
          this.active = undefined;
          this.settle(finalRecord(queued, 'CANCELLED', CANCELLED_BY_REGISTER, NOTHING));
          return;
        }
        // Durable before the command leaves: after a crash, this says what it was for.
        const { queued: _q, ...leaving } = queued;
        const traceBefore = this.state.lastTrace;
        const sent = this.state.put(
          traceBefore === undefined ? leaving : { ...leaving, trace_before: traceBefore },
        );
        this.session.once('accepted', accepted);
        try {
          let outcome = await this.session.run(command);
          if (outcome.kind === 'refused' && outcome.resultCode === ZVT_NOT_REGISTERED) {
            // The PT forgot the registration (restarted): nothing ran; register, once more.
            this.registered = false;
            await this.ensureRegistered();
            outcome = await this.session.run(command);
          }
          return this.finishTransaction(sent.transaction_id, outcome);
        } finally {
          this.session.off('accepted', accepted);
        }
      });
      run.then(
        () => resolve(),
        (error: unknown) => {
          // Not settled: this driver no longer runs it, so lastTransaction() asks the PT.
          if (this.active === record.transaction_id) this.active = undefined;
          this.screen = SCREEN_READY;
          this.logger?.warn('ZVT transaction without a known outcome', {
            transaction_id: record.transaction_id,
            error: String(error),
          });
          if (!answered) reject(linkError(error));
        },
      );
    });
  }

  private finishTransaction(id: string, outcome: ZvtOutcome): void {
    this.noteEndOfDayRequired(outcome);
    const record = this.state.get(id);
    this.active = undefined;
    this.screen = SCREEN_READY;
    if (!record || record.phase !== 'IN_PROGRESS') return;
    this.settle(recordFromOutcome(record, outcome, this.profile, this.clock.now()));
  }

  private async runReversal(record: ZvtDriverRecord, receiptNumber: number): Promise<void> {
    const pending = this.state.put({ ...record, reversal_pending: true });
    const outcome = await this.exclusive(async () => {
      await this.ensureRegistered();
      return this.session.run(reversal(receiptNumber, { password: this.password }));
    }).catch((error: unknown) => {
      throw linkError(error);
    });
    this.finishReversal(pending, outcome);
  }

  private finishReversal(record: ZvtDriverRecord, outcome: ZvtOutcome): ZvtDriverRecord {
    const code = outcome.resultCode ?? (outcome.kind === 'completed' ? 0 : 0xff);
    // B4: already reversed (a reversal sent again after a crash found its work done).
    if ((outcome.kind === 'completed' && code === 0) || code === 0xb4) {
      if (outcome.result?.traceNumber !== undefined)
        this.state.setLastTrace(outcome.result.traceNumber);
      return this.settle(finalRecord(record, 'CANCELLED', REVERSED, { details: record.details }));
    }
    const { reversal_pending: _r, ...unchanged } = record;
    this.state.put(unchanged);
    const why = resultOfCode(code).result_description;
    this.emitResult(unchanged, `Reversal refused by the terminal: ${why}`);
    return unchanged;
  }

  /**
   * Runs `task`; false instead of the error when the PT did not take the command within T3
   * (it still works on something else: ask again later). Other errors are thrown.
   */
  private async notAnswering(task: () => Promise<unknown>): Promise<boolean> {
    try {
      await task();
      return true;
    } catch (error) {
      if ((error as Partial<ZvtError>).code === 'T3_TIMEOUT' && !this.session.channel.closed) {
        return false;
      }
      throw error;
    }
  }

  /**
   * A record this driver is not running but the PT may have: ask the PT (06 20 / 06 30).
   * While the PT is busy (84 83 / 84 9C) or does not answer within T3, the record stays
   * IN_PROGRESS and the next question asks again.
   */
  private async settleFromTerminal(record: ZvtDriverRecord): Promise<ZvtDriverRecord> {
    try {
      return await this.exclusive(async () => {
        const current = this.state.get(record.transaction_id) ?? record;
        if (current.phase !== 'IN_PROGRESS' && !current.reversal_pending) return current;
        // Recorded but never sent: the driver stopped while it waited its turn.
        if (current.queued)
          return this.settle(finalRecord(current, 'CANCELLED', NOT_STARTED, NOTHING));
        // Never read from stale messages: wait until the terminal has been quiet for 2 × T3.
        await this.untilTerminalQuiet();
        let outcome: ZvtOutcome | undefined;
        const asked = await this.notAnswering(async () => {
          await this.ensureRegistered();
          outcome = await this.session.run(
            current.reversal_pending && current.receipt_number !== undefined
              ? reversal(current.receipt_number, { password: this.password })
              : repeatReceipt({
                  password: this.password,
                  serviceByte: REPEAT_RECEIPT.statusInformation,
                }),
          );
        });
        if (!asked || !outcome || isBusyRefusal(outcome)) return current;
        if (current.reversal_pending) return this.finishReversal(current, outcome);
        return this.settle(
          recordFromRepeatReceipt(current, outcome, this.profile, this.clock.now()),
        );
      });
    } catch (error) {
      throw linkError(error);
    }
  }

  // ---- helpers ----

  /** A start (or cancel) for an id the driver knows: its result, progress, or the PT's word. */
  private async answerExisting(record: ZvtDriverRecord): Promise<void> {
    if (record.phase !== 'IN_PROGRESS' && !record.reversal_pending) return this.emitResult(record);
    if (this.active === record.transaction_id) {
      this.emit('progress', { transaction_id: record.transaction_id, screen_text: this.screen });
      return;
    }
    const settled = await this.settleFromTerminal(record);
    if (settled.phase !== 'IN_PROGRESS') this.emitResult(settled);
  }

  private ghost(transactionId: string): ZvtDriverRecord {
    return finalRecord(
      {
        transaction_id: transactionId,
        kind: 'PURCHASE',
        amount: 0,
        currency: this.currency,
        phase: 'IN_PROGRESS',
      },
      'CANCELLED',
      UNKNOWN_TRANSACTION,
    );
  }

  /** Stores a final record and reports it. */
  private settle(record: ZvtDriverRecord): ZvtDriverRecord {
    const stored = this.state.put(record, record.trace_number);
    this.emitResult(stored);
    return stored;
  }

  private emitResult(record: ZvtDriverRecord, description?: string): void {
    const result = resultOf(record);
    if (!result) return;
    this.emit('result', description ? { ...result, result_description: description } : result);
  }

  private statusNow(): ReaderStatus {
    // A ZVT PT reports no power readings; one that answers is powered.
    return { plugged_in: true, screen_message: this.screen };
  }

  private async ensureRegistered(): Promise<void> {
    if (this.registered) return;
    const outcome = await this.session.run(
      registrationFor(this.profile, this.password, this.currency),
    );
    this.registered = outcome.kind === 'completed';
  }

  /** Runs `task` after every command queued before it. */
  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private readonly onIntermediateStatus = (message: IntermediateStatus): void => {
    this.screen = screenTextOf(message, this.profile);
    if (this.active !== undefined) {
      this.emit('progress', { transaction_id: this.active, screen_text: this.screen });
    }
    this.emit('status', this.statusNow());
  };

  private readonly onClose = (error?: ZvtError): void => {
    this.emit('close', error ? linkError(error) : undefined);
  };
}

/** Opens the driver on a channel and registers with the terminal. */
export async function openZvtCardReader(options: ZvtReaderOptions): Promise<ZvtCardReader> {
  const reader = new ZvtCardReader(options);
  try {
    await reader.open();
  } catch (error) {
    await reader.close().catch(() => undefined);
    throw linkError(error);
  }
  return reader;
}

export { linkError, resultOf, zvtCapabilities };
