/**
 * A ReaderPort a test drives by hand: it records every call, answers `lastTransaction()`
 * with `record`, and emits the events the test tells it to. `fail` makes the next calls
 * of a kind reject (as a lost serial line would: `disconnected: true`).
 */
import { EventEmitter } from 'node:events';
import type {
  ReaderEvents,
  ReaderListener,
  ReaderPort,
  ReaderReadings,
  ReaderRecord,
  ReaderStart,
} from '../ports.js';

export type ReaderCall =
  | { kind: 'start'; request: ReaderStart }
  | { kind: 'continue'; transactionId: string; requestedAmount?: number }
  | { kind: 'cancel'; transactionId: string }
  | { kind: 'reverse'; transactionId: string }
  | { kind: 'lastTransaction' | 'status' };

export class ScriptedReader implements ReaderPort {
  readonly calls: ReaderCall[] = [];
  record: ReaderRecord | null = null;
  readings: ReaderReadings = { battery_percentage: 80, plugged_in: false, screen_message: 'Ready' };
  /** Calls of these kinds reject, this many times each (Infinity: until changed). */
  readonly fail = new Map<ReaderCall['kind'], number>();
  private readonly events = new EventEmitter();

  start(request: ReaderStart): Promise<void> {
    return this.answer({ kind: 'start', request });
  }
  continue(transactionId: string, requestedAmount?: number): Promise<void> {
    return this.answer({
      kind: 'continue',
      transactionId,
      ...(requestedAmount === undefined ? {} : { requestedAmount }),
    });
  }
  cancel(transactionId: string): Promise<void> {
    return this.answer({ kind: 'cancel', transactionId });
  }
  reverse(transactionId: string): Promise<void> {
    return this.answer({ kind: 'reverse', transactionId });
  }
  async lastTransaction(): Promise<ReaderRecord | null> {
    await this.answer({ kind: 'lastTransaction' });
    return this.record;
  }
  async status(): Promise<ReaderReadings> {
    await this.answer({ kind: 'status' });
    return this.readings;
  }

  on<E extends keyof ReaderEvents>(event: E, listener: ReaderListener<E>): void {
    this.events.on(event, listener);
  }
  off<E extends keyof ReaderEvents>(event: E, listener: ReaderListener<E>): void {
    this.events.off(event, listener);
  }
  emit<E extends keyof ReaderEvents>(event: E, payload: ReaderEvents[E]): void {
    this.events.emit(event, payload);
  }
  async close(): Promise<void> {}

  /** The calls of one kind, in order. */
  of<K extends ReaderCall['kind']>(kind: K): Extract<ReaderCall, { kind: K }>[] {
    return this.calls.filter(
      (call): call is Extract<ReaderCall, { kind: K }> => call.kind === kind,
    );
  }

  private answer(call: ReaderCall): Promise<void> {
    this.calls.push(call);
    const failures = this.fail.get(call.kind) ?? 0;
    if (failures <= 0) return Promise.resolve();
    this.fail.set(call.kind, failures - 1);
    return Promise.reject(
      Object.assign(new Error(`scripted ${call.kind} failure`), {
        code: 'ACK_TIMEOUT',
        disconnected: true,
      }),
    );
  }
}
