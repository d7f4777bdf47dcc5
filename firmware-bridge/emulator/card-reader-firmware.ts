/**
 * The emulated card reader: the READER end of the serial link, a stand-in for the
 * firmware of a real one. Everything it does is driven through the serial protocol
 * (docs/serial-protocol.md); the only other inputs are physical (the charger, the battery).
 *
 * ```
 *   start ──▶ IN_PROGRESS ──(delay)──▶ COMPLETED (result)
 *                  │  pause_on_customer_identified
 *                  └─(delay)─▶ CUSTOMER_IDENTIFIED ──continue──▶ IN_PROGRESS ──(delay)──▶ COMPLETED
 *   cancel / reverse while running or paused ──▶ CANCELLED ABORTED
 *   reverse after SUCCESS ──▶ CANCELLED REVERSED
 * ```
 *
 * The outcome follows the trigger amounts of scenarios.ts (docs/simulator.md). Every state
 * is written to the reader's memory before the host hears of it, and a transaction_id the
 * memory knows is never run again: a repeated command is answered with the current state.
 * After a restart, a transaction that was still running is recorded as interrupted
 * (CANCELLED: nothing was charged). One transaction at a time; a start while busy is
 * refused with a CANCELLED result (READER_BUSY).
 */
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { z } from 'zod';
import { SerialLink, type SerialLinkOptions } from '../serial/link.js';
import type { HostMessage, LastTransactionRecord, ReaderMessage } from '../serial/messages.js';
import { systemTimers, type Timers } from '../../common/clock.js';
import { READER_RESULTS, type ReaderOutcome, type ReaderStop } from './reader-results.js';
import { InMemoryReaderMemory, type ReaderMemory, type ReaderRecord } from './reader-memory.js';
import type { StoredStart } from './reader-memory.js';
import { ReaderStatusReporter, type BatteryOptions } from './reader-status.js';
import { formatAmount } from './receipts.js';
import {
  scenarioAfterContinue,
  scenarioFor,
  type Scenario,
  type ScenarioDelay,
} from './scenarios.js';

export interface CardReaderFirmwareOptions {
  /** Non-volatile memory (default: in memory, lost with the process). */
  memory?: ReaderMemory;
  /** What a "normal" scenario takes, in ms (default 3000); trigger amounts fix some delays. */
  delayMs?: number;
  /** The reader's serial number: part of references and the acquirer terminal id (default 1). */
  serial?: number;
  /** Battery at power-on; `false` for a stationary reader (default: 80 %, not plugged in). */
  battery?: BatteryOptions | false;
  /** Timers of the scenarios and the battery (default: the system's). */
  timers?: Timers;
  now?: () => Date;
  /** Options of each link served (ack timeout, retries, baud rate). */
  link?: Omit<SerialLinkOptions<'reader'>, 'role'>;
}

export type CardReaderFirmwareEvents = {
  /** A record was written to the reader's memory (for logs and bench tools). */
  record: [record: ReaderRecord];
};

type Start = z.infer<typeof StoredStart>;

/** The transaction the reader is busy with. */
interface Run {
  record: ReaderRecord;
  start: Start;
  scenario: Scenario;
  screen: string;
  timer?: unknown;
}

const FINAL = new Set(['COMPLETED', 'CANCELLED']);

export class CardReaderFirmware extends EventEmitter<CardReaderFirmwareEvents> {
  readonly memory: ReaderMemory;
  private readonly status: ReaderStatusReporter;
  private readonly timers: Timers;
  private readonly delayMs: number;
  private readonly serial: number;
  private readonly now: () => Date;
  private link: SerialLink<'reader'> | undefined;
  private run: Run | undefined;
  private closed = false;

  constructor(private readonly options: CardReaderFirmwareOptions = {}) {
    super();
    this.memory = options.memory ?? new InMemoryReaderMemory();
    this.timers = options.timers ?? systemTimers;
    this.delayMs = options.delayMs ?? 3000;
    this.serial = options.serial ?? 1;
    this.now = options.now ?? (() => new Date());
    this.status = new ReaderStatusReporter({
      battery: options.battery ?? {},
      timers: this.timers,
      send: (message) => this.send(message),
    });
    for (const record of this.memory.all()) {
      if (!FINAL.has(record.phase)) this.finish(record, READER_RESULTS.interrupted);
    }
  }

  /** Serves the host on this line (a pty, a serial port, a stream-pair end) from now on. */
  serve(port: Duplex): SerialLink<'reader'> {
    void this.link?.close();
    const link = new SerialLink(port, { ...this.options.link, role: 'reader' });
    link.on('message', (message) => this.onMessage(message));
    link.once('close', () => {
      if (this.link === link) this.link = undefined;
    });
    this.link = link;
    this.status.announce();
    return link;
  }

  /** Physical: the charger plugged in or pulled. */
  plug(pluggedIn: boolean): void {
    this.status.plug(pluggedIn);
  }

  /** Physical: the battery's charge set (a swapped battery, or a bench shortcut). */
  setBattery(percentage: number): void {
    this.status.setBattery(percentage);
  }

  /** Powers off: timers stop, the link closes, the memory is closed (its records kept). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.run?.timer !== undefined) this.timers.clearTimeout(this.run.timer);
    this.run = undefined;
    this.status.stop();
    await this.link?.close();
    this.memory.close();
  }

  // ---- the host's messages ----

  private onMessage(message: HostMessage): void {
    if (this.closed) return;
    this.status.hostSeen();
    switch (message.type) {
      case 'transaction.start': {
        const { v: _v, type: _t, ...start } = message;
        return this.start(start);
      }
      case 'transaction.continue':
        return this.continueRun(message.transaction_id, message.requested_amount);
      case 'transaction.cancel':
        return this.stop(message.transaction_id, 'cancel');
      case 'transaction.reverse':
        return this.stop(message.transaction_id, 'reverse');
      case 'last_transaction.query':
        void this.send({
          v: 1,
          type: 'last_transaction.answer',
          ...(message.query_id === undefined ? {} : { query_id: message.query_id }),
          transaction: lastTransactionOf(this.memory.last()),
        });
        return;
      case 'status.query':
        void this.status.answer(message.query_id);
        return;
    }
  }

  private start(start: Start): void {
    const known = this.memory.get(start.transaction_id);
    if (known) return this.replay(known);
    if (this.run) return this.refuse(start.transaction_id, READER_RESULTS.busy);
    const sequence = (this.memory.last()?.sequence ?? 0) + 1;
    const scenario = scenarioFor(start, this.context(sequence));
    const record = this.write({
      transaction_id: start.transaction_id,
      sequence,
      start,
      phase: 'IN_PROGRESS',
    });
    const run: Run = { record, start, scenario, screen: '' };
    this.run = run;
    this.show(run, `${startTitle(start)} - present card`);
    const next = scenario.pause ? () => this.pause(run) : () => this.complete(run);
    this.after(
      run,
      this.delayOf(scenario.delay),
      scenario.pause ? 'Reading card' : PROCESSING,
      next,
    );
  }

  private continueRun(transactionId: string, requestedAmount: number | undefined): void {
    const known = this.memory.get(transactionId);
    if (!known) return this.refuse(transactionId, READER_RESULTS.unknown);
    const run = this.run;
    if (run?.record.transaction_id !== transactionId || known.phase !== 'CUSTOMER_IDENTIFIED') {
      return this.replay(known);
    }
    run.scenario = scenarioAfterContinue(run.start, this.context(known.sequence), requestedAmount);
    run.record = this.write({
      ...withoutOutcome(known),
      phase: 'IN_PROGRESS',
      ...(requestedAmount === undefined ? {} : { continued_amount: requestedAmount }),
    });
    this.show(run, PROCESSING);
    run.timer = this.timers.setTimeout(() => this.complete(run), this.delayMs);
  }

  private stop(transactionId: string, how: ReaderStop): void {
    const known = this.memory.get(transactionId);
    if (!known) return this.refuse(transactionId, READER_RESULTS.unknown);
    const run = this.run;
    if (run?.record.transaction_id === transactionId) {
      if (run.timer !== undefined) this.timers.clearTimeout(run.timer);
      this.run = undefined;
      this.announce(this.finish(run.record, READER_RESULTS.cancelled), 'Cancelled');
      return;
    }
    if (how === 'reverse' && known.phase === 'COMPLETED' && known.result_code === 'SUCCESS') {
      this.announce(this.finish(known, READER_RESULTS.reversed), 'Reversed');
      return;
    }
    this.replay(known);
  }

  // ---- steps of a run ----

  private pause(run: Run): void {
    const identity = run.scenario.customerIdentity;
    run.timer = undefined;
    run.record = this.write({
      ...run.record,
      phase: 'CUSTOMER_IDENTIFIED',
      ...(identity ? { details: { customer_identity: identity } } : {}),
    });
    run.screen = 'Please wait';
    this.announce(run.record, run.screen);
  }

  private complete(run: Run): void {
    const { result_code, result_description, details } = run.scenario;
    this.run = undefined;
    const record = this.write({
      ...run.record,
      phase: 'COMPLETED',
      result_code,
      ...(result_description === undefined ? {} : { result_description }),
      details,
    });
    this.announce(record, result_code === 'SUCCESS' ? 'Approved' : 'Not approved');
  }

  /** Runs `step` after `ms`, showing `midway` halfway through; at once when `ms` is 0. */
  private after(run: Run, ms: number, midway: string, step: () => void): void {
    if (ms <= 0) return step();
    const half = Math.floor(ms / 2);
    run.timer = this.timers.setTimeout(() => {
      this.show(run, midway);
      run.timer = this.timers.setTimeout(step, ms - half);
    }, half);
  }

  // ---- answers ----

  /** A command for a transaction this reader never ran: recorded so it never runs later. */
  private refuse(transactionId: string, outcome: ReaderOutcome): void {
    this.replay(this.write({ transaction_id: transactionId, sequence: 0, ...outcome }));
  }

  /** Tells the host where a known transaction stands, without changing anything. */
  private replay(record: ReaderRecord): void {
    const id = record.transaction_id;
    if (record.phase === 'IN_PROGRESS') {
      const screen = this.run?.record.transaction_id === id ? this.run.screen : PROCESSING;
      void this.send({
        v: 1,
        type: 'transaction.progress',
        transaction_id: id,
        screen_text: screen,
      });
    } else if (record.phase === 'CUSTOMER_IDENTIFIED') {
      const customer_identity = record.details?.customer_identity ?? {};
      void this.send({
        v: 1,
        type: 'transaction.customer_identified',
        transaction_id: id,
        customer_identity,
      });
    } else {
      void this.send({
        v: 1,
        type: 'transaction.result',
        transaction_id: id,
        phase: record.phase,
        result_code: record.result_code ?? 'SYSTEM_ERROR',
        ...(record.result_description === undefined
          ? {}
          : { result_description: record.result_description }),
        ...(record.details === undefined ? {} : { details: record.details }),
      });
    }
  }

  /**
   * The new screen, then what the host hears of the transaction: a real terminal shows
   * "Approved" as it answers, so a host that reports its state on the answer reports it
   * with the screen of then, not the one before.
   */
  private announce(record: ReaderRecord, screen: string): void {
    this.status.showScreen(screen);
    this.replay(record);
  }

  /** A new screen while running: progress to the host, and the status's screen message. */
  private show(run: Run, screen: string): void {
    run.screen = screen;
    this.announce(run.record, screen);
  }

  // ---- memory and line ----

  /** Ends a transaction as CANCELLED, keeping what its record already said (details). */
  private finish(record: ReaderRecord, outcome: ReaderOutcome): ReaderRecord {
    return this.write({ ...withoutOutcome(record), ...outcome });
  }

  private write(record: Omit<ReaderRecord, 'updated_at'>): ReaderRecord {
    const written = { ...record, updated_at: this.now().toISOString() };
    this.memory.put(written);
    this.emit('record', written);
    return written;
  }

  /** Sends if a host line is served; never rejects (the host recovers with its queries). */
  private send(message: ReaderMessage): Promise<void> {
    const link = this.link;
    if (!link || this.closed) return Promise.resolve();
    return link.send(message).catch((error: { code?: string }) => {
      if (error.code === 'ACK_TIMEOUT') this.status.hostGone();
    });
  }

  private delayOf(delay: ScenarioDelay): number {
    return delay.kind === 'instant' ? 0 : delay.kind === 'fixed' ? delay.ms : this.delayMs;
  }

  private context(sequence: number) {
    return { terminalSerial: this.serial, sequence, now: this.now() };
  }
}

const PROCESSING = 'Processing, please wait';

function startTitle(start: Start): string {
  if (start.kind === 'ACCOUNT_CHECK') return 'Account check';
  const title = start.kind === 'REFUND' ? 'Refund' : 'Purchase';
  return `${title} ${formatAmount(start.requested_amount + (start.cashback_amount ?? 0), start.currency)}`;
}

/** The record without its result code and description (details stay). */
function withoutOutcome(record: ReaderRecord): ReaderRecord {
  const { result_code: _c, result_description: _d, ...rest } = record;
  return rest;
}

function lastTransactionOf(record: ReaderRecord | undefined): LastTransactionRecord | null {
  if (!record) return null;
  const { transaction_id, phase, result_code, result_description, details } = record;
  return {
    transaction_id,
    phase,
    ...(result_code === undefined ? {} : { result_code }),
    ...(result_description === undefined ? {} : { result_description }),
    ...(details === undefined ? {} : { details }),
  };
}
