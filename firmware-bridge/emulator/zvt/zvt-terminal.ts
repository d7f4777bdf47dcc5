/**
 * The emulated ZVT payment terminal: the PT end of the ZVT protocol, for benches, the
 * simulators and the driver's tests. It serves any number of ECR connections (serial
 * links, TCP channels: terminal-server.ts) but, like a real PT, runs one command at a time.
 *
 * ```
 *   06 00 registration ─ password check ─▶ 80 00 00, 06 0F {19, 29, 49}
 *   06 01 / 06 31 ─▶ 80 00 00, [04 FF 0A … 04 FF 0E], 04 0F {27 …}, [06 D1 …], 06 0F | 06 1E
 *   06 30 receipt ─▶ 80 00 00, 04 0F (own receipt and trace), [06 D1 …], 06 0F | 06 1E B4/B5
 *   06 50 ─▶ 80 00 00, 04 0F {27 04 0B 0D 0C 60}, [06 D1 …], 06 0F     (closes the batch)
 *         ─▶ 80 00 00, 06 1E A0 while endOfDayFailures last (the batch stays open)
 *   06 20 ─▶ 80 00 00, [04 0F again (service 01)], [06 D1 … unless service 02], 06 0F
 *   05 01 ─▶ 80 00 00, 06 0F <version> <status 00, or F0 when an end-of-day is overdue>
 *   06 01 / 06 31 while an end-of-day is overdue ─▶ 80 00 00, 06 1E F0
 *   06 02, 06 B0 (idle), 06 E0 ─▶ 80 00 00
 * ```
 *
 * Outcomes follow the trigger amounts of the native emulator (terminal-outcomes.ts). Every
 * transaction is journalled before the ECR hears of it; one found unfinished at start-up
 * was interrupted by the crash and is recorded as aborted (6C), nothing charged. Receipts
 * go out as 06 D1 lines only when the ECR registered as printer (config 80 with 02 for
 * payments, 04 for end-of-day); 04 FF only with config 08. A 06 B0 while a payment waits
 * for its card aborts it (06 1E 6C); once the result is decided it stands.
 */
import { EventEmitter } from 'node:events';
import { systemTimers, type Timers } from '../../../common/clock.js';
import { formatAmount } from '../receipts.js';
import type { ScenarioDelay } from '../scenarios.js';
import type { Bmp } from '../../zvt/bmp.js';
import {
  bmpsFrom,
  readBmps,
  TOTALS_GROUPS,
  totalsBytes,
  type BmpValues,
} from '../../zvt/bmp-values.js';
import type { ApduChannel } from '../../zvt/channel.js';
import { DEFAULT_PASSWORD, EUR } from '../../zvt/command-builders.js';
import { decimalFromBcd } from '../../zvt/encodings.js';
import { decodeMessageBytes } from '../../zvt/messages.js';
import type { EcrCommand, PrintLine, Registration } from '../../zvt/message-types.js';
import { ZvtPtSession, type CommandHandle, type PtSessionOptions } from '../../zvt/pt-session.js';
import { TerminalJournal } from './terminal-journal.js';
import {
  InMemoryTerminalMemory,
  type JournalEntry,
  type TerminalMemory,
} from './terminal-memory.js';
import {
  CURRENCIES,
  endOfDayReceipt,
  RESULT_CODES,
  receiptsOf,
  reversalReceipt,
  scenarioOf,
  statusInformationOf,
  TERMINAL_STATUS_END_OF_DAY_REQUIRED,
  timeAndDate,
  ZVT_CODES,
  type Identifiers,
} from './terminal-outcomes.js';

export interface ZvtTerminalOptions {
  /** Non-volatile journal (default: in memory, lost with the process). */
  memory?: TerminalMemory;
  /** The password of 06 00 and the admin commands, 6 digits (default 000000). */
  password?: string;
  /** What a "normal" transaction takes, in ms (default 3000); trigger amounts fix some. */
  delayMs?: number;
  /** BMP 29, 8 digits (default 29001001). */
  terminalId?: string;
  /** Gives the references of the scenarios (default 1). */
  serial?: number;
  /** Refuse payments and admin commands with 84 6B 00 before 06 00 (default true). */
  requireRegistration?: boolean;
  softwareVersion?: string;
  /**
   * Like a real PT left open too long, it then needs an end-of-day: its status enquiry
   * answers F0 (end-of-day required) and payments and refunds end at once with 06 1E F0
   * (nothing charged) until an end-of-day (06 50) closes the batch. After this many payments and refunds in
   * the open batch (default: never).
   */
  endOfDayAfterPayments?: number;
  /** The same, once the open batch's first entry is this many hours old (default: never). */
  endOfDayAfterHours?: number;
  /**
   * The first this many end-of-days fail as when the acquirer's host cannot be reached:
   * 06 1E A0 (receiver not ready), the batch left open (default 0).
   */
  endOfDayFailures?: number;
  /** Options of each PT session served (the ECR's answer timeout). */
  session?: Omit<PtSessionOptions, 'timers'>;
  timers?: Timers;
  now?: () => Date;
}

export type ZvtTerminalEvents = {
  /** A journal entry was written (for logs and bench tools). */
  entry: [entry: JournalEntry];
  /** A 06 E0 display text. */
  display: [lines: string[]];
};

type Wait = 'elapsed' | 'aborted' | 'closed';

export class ZvtTerminalEmulator extends EventEmitter<ZvtTerminalEvents> {
  readonly memory: TerminalMemory;
  private readonly journal: TerminalJournal;
  /** What the last 06 00 set; undefined before it and after 06 02. */
  registration: { config: number; tlv: boolean; currency?: number } | undefined;
  private readonly password: string;
  private readonly delayMs: number;
  private readonly terminalId: string;
  private readonly timers: Timers;
  private readonly now: () => Date;
  private readonly sessions = new Set<ZvtPtSession>();
  private busy: CommandHandle | undefined;
  private closed = false;
  private readonly closing = new Set<() => void>();
  private endOfDayFailuresLeft: number;

  constructor(private readonly options: ZvtTerminalOptions = {}) {
    super();
    this.memory = options.memory ?? new InMemoryTerminalMemory();
    this.password = options.password ?? DEFAULT_PASSWORD;
    this.delayMs = options.delayMs ?? 3000;
    this.terminalId = options.terminalId ?? '29001001';
    this.timers = options.timers ?? systemTimers;
    this.now = options.now ?? (() => new Date());
    this.journal = new TerminalJournal(this.memory, this.now, (entry) => this.emit('entry', entry));
    this.journal.recoverInterrupted();
    this.endOfDayFailuresLeft = options.endOfDayFailures ?? 0;
  }

  /** The next `count` end-of-days fail as with `endOfDayFailures` (benches, tests). */
  failEndOfDays(count: number): void {
    this.endOfDayFailuresLeft = count;
  }

  /** Serves one ECR connection (a serial link, a TCP channel) from now on. */
  serve(channel: ApduChannel): ZvtPtSession {
    const session = new ZvtPtSession(channel, { ...this.options.session, timers: this.timers });
    this.sessions.add(session);
    session.on('command', (command, handle) => void this.run(command, handle));
    session.once('close', () => this.sessions.delete(session));
    return session;
  }

  /** Powers off: waits end at once, sessions close, the journal is closed (its entries kept). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const wake of this.closing) wake();
    await Promise.all([...this.sessions].map((session) => session.close()));
    this.memory.close();
  }

  private async run(command: EcrCommand, handle: CommandHandle): Promise<void> {
    if (this.busy || this.closed) return handle.refuse(ZVT_CODES.functionNotPossible);
    this.busy = handle;
    handle.once('ended', () => {
      if (this.busy === handle) this.busy = undefined;
    });
    try {
      await this.dispatch(command, handle);
    } catch {
      // The ECR stopped answering (ANSWER_TIMEOUT) or went away: the journal already says
      // what happened; Repeat Receipt tells the ECR later.
    } finally {
      if (this.busy === handle) this.busy = undefined;
      // Never a final message here: after an approved result, a 06 1E would contradict it.
      if (!handle.ended) handle.abandon();
    }
  }

  private async dispatch(command: EcrCommand, handle: CommandHandle): Promise<void> {
    if (
      'password' in command &&
      command.password !== undefined &&
      command.password !== this.password
    ) {
      return handle.refuse(ZVT_CODES.functionNotPossible);
    }
    switch (command.type) {
      case 'registration':
        return this.register(command, handle);
      case 'log-off':
        this.registration = undefined;
        return handle.acknowledge();
      case 'abort-command':
        return handle.acknowledge();
      case 'display-text':
        this.emit(
          'display',
          command.bmps.filter((bmp) => bmp.format === 'text').map((bmp) => bmp.value as string),
        );
        return handle.acknowledge();
      case 'status-enquiry': {
        await handle.accept();
        const noVersion = ((readBmps(command.bmps).serviceByte ?? 0) & 0x02) !== 0;
        const version = this.options.softwareVersion ?? 'TPS-ZVT-EMULATOR-1.0';
        await handle.end({
          type: 'completion',
          status: noVersion
            ? { terminalStatus: this.terminalStatus() }
            : { softwareVersion: version, terminalStatus: this.terminalStatus() },
          bmps: [],
        });
        return;
      }
    }
    if (!this.registration && this.options.requireRegistration !== false) {
      return handle.refuse(ZVT_CODES.notRegistered);
    }
    const values = readBmps(command.bmps);
    switch (command.type) {
      case 'authorisation':
      case 'refund':
        return this.pay(command.type === 'refund' ? 'REFUND' : 'PURCHASE', values, handle);
      case 'reversal':
        return this.reverse(values, handle);
      case 'end-of-day':
        return this.endOfDay(handle);
      case 'repeat-receipt':
        return this.repeatReceipt(values.serviceByte ?? 0, handle);
    }
  }

  private async register(command: Registration, handle: CommandHandle) {
    const { password, config, currency } = command;
    if (password !== this.password) return handle.refuse(ZVT_CODES.functionNotPossible);
    const code = currency === undefined ? undefined : decimalFromBcd(currency);
    await handle.accept();
    // A BMP 06 in the registration (even empty) activates TLV output (zvt-notes §4).
    const tlv = command.bmps.some((bmp) => bmp.tag === 0x06);
    this.registration = { config, tlv, ...(code === undefined ? {} : { currency: code }) };
    // In the order of the notes: 19 status byte, 29 TID, 49 currency (echoed only if sent).
    const bmps = [
      ...bmpsFrom({ paymentType: 0x00 }),
      ...bmpsFrom({ terminalId: this.terminalId }),
      ...bmpsFrom({ currency: code }),
    ];
    await handle.end({ type: 'completion', bmps });
  }

  // ---- payments and refunds ----

  private async pay(kind: 'PURCHASE' | 'REFUND', values: BmpValues, handle: CommandHandle) {
    const amount = values.amount;
    if (amount === undefined) return handle.refuse(ZVT_CODES.protocolError);
    const currency = values.currency ?? this.registration?.currency ?? EUR;
    const alpha = CURRENCIES.get(currency);
    if (!alpha) return handle.refuse(ZVT_CODES.wrongCurrency);
    await handle.accept();
    if (this.endOfDayDue()) {
      // Nothing charged, nothing journalled: the batch must be closed first.
      await handle.end({ type: 'abort', resultCode: ZVT_CODES.endOfDayRequired, bmps: [] });
      return;
    }
    const entry = this.journal.begin(kind === 'REFUND' ? 'REFUND' : 'PAYMENT', amount, currency);
    const ids = this.identifiers(entry);
    const sequence = entry.seq;
    const terminalSerial = this.options.serial ?? 1;
    const scenario = scenarioOf({
      kind,
      amount,
      currency: alpha,
      sequence,
      terminalSerial,
      now: ids.now,
    });
    const waited = await this.play(this.delayOf(scenario.delay), handle);
    if (waited === 'closed') return;
    if (waited === 'aborted') {
      const code = RESULT_CODES.ABORTED;
      const info = bmpsFrom({ resultCode: code, amount, currency, ...this.numbers(ids) });
      this.journal.finish(entry, { code, approved: false, info, receipts: [] });
      await handle.send({ type: 'status-information', bmps: info });
      await handle.end({ type: 'abort', resultCode: code, bmps: [] });
      return;
    }
    const code = RESULT_CODES[scenario.result_code];
    const approved = code === 0;
    const info = bmpsFrom(
      statusInformationOf(scenario, amount, ids, { tlv: this.registration?.tlv === true }),
    );
    const receipts = receiptsOf(scenario);
    const scheme = scenario.details.payment_method_details?.card_scheme;
    this.journal.finish(
      entry,
      { code, approved, info, receipts },
      {
        amount: approved ? (scenario.details.total_amount ?? amount) : amount,
        ...(scheme ? { scheme } : {}),
      },
    );
    await this.report(info, this.configured(0x82) ? receipts : [], handle);
    await handle.end(
      approved ? { type: 'completion', bmps: [] } : { type: 'abort', resultCode: code, bmps: [] },
    );
  }

  /**
   * The card dialogue: 04 FF 0A (insert card), half the time, 04 FF 0E (please wait), the
   * rest. The customer goes on with the card whether or not the ECR still listens: a lost
   * 04 FF does not stop the payment, whose result is journalled for Repeat Receipt.
   */
  private async play(ms: number, handle: CommandHandle): Promise<Wait> {
    const verbose = this.configured(0x08);
    const tell = (status: number) =>
      verbose
        ? handle.send({ type: 'intermediate-status', status, bmps: [] }).catch(() => undefined)
        : undefined;
    await tell(0x0a);
    const waited = await this.wait(Math.floor(ms / 2), handle);
    if (waited !== 'elapsed') return waited;
    await tell(0x0e);
    return this.wait(ms - Math.floor(ms / 2), handle);
  }

  // ---- reversal, end-of-day, repeat receipt ----

  private async reverse(values: BmpValues, handle: CommandHandle) {
    if (values.receiptNumber === undefined) return handle.refuse(ZVT_CODES.protocolError);
    await handle.accept();
    const found = this.journal.payment(values.receiptNumber);
    if (!found?.entry.approved || found.reversed) {
      const resultCode = found?.reversed
        ? ZVT_CODES.alreadyReversed
        : ZVT_CODES.reversalNotPossible;
      await handle.end({ type: 'abort', resultCode, bmps: [] });
      return;
    }
    const { amount, currency, seq, receipt_number } = found.entry;
    const entry = this.journal.begin('REVERSAL', amount, currency, { reverses: seq });
    const ids = this.identifiers(entry);
    const info = bmpsFrom({
      resultCode: 0,
      amount,
      currency,
      ...timeAndDate(ids.now),
      ...this.numbers(ids),
    });
    const receipt = reversalReceipt(this.money(amount, currency), receipt_number, ids);
    this.journal.finish(entry, { code: 0, approved: true, info, receipts: [receipt] });
    await this.report(info, this.configured(0x82) ? [receipt] : [], handle);
    await handle.end({ type: 'completion', bmps: [] });
  }

  private async endOfDay(handle: CommandHandle) {
    await handle.accept();
    if (this.endOfDayFailuresLeft > 0) {
      this.endOfDayFailuresLeft -= 1;
      await handle.end({ type: 'abort', resultCode: ZVT_CODES.receiverNotReady, bmps: [] });
      return;
    }
    const { total, totals } = this.journal.batchTotals();
    const currency = this.registration?.currency ?? EUR;
    const entry = this.journal.begin('END_OF_DAY', total, currency);
    const ids = this.identifiers(entry);
    const info: Bmp[] = [
      ...bmpsFrom({
        resultCode: 0,
        amount: total,
        traceNumber: ids.traceNumber,
        ...timeAndDate(ids.now),
      }),
      { tag: 0x60, format: 'binary', value: totalsBytes(totals) },
    ];
    const groups = TOTALS_GROUPS.map((name) => ({ name, ...totals.groups[name] }))
      .filter((group) => group.count > 0)
      .map(({ name, count, total: sum }) => ({
        name: name.toUpperCase(),
        count,
        total: this.money(sum, currency),
      }));
    const receipt = endOfDayReceipt(groups, this.money(total, currency), ids);
    this.journal.finish(entry, { code: 0, approved: true, info, receipts: [receipt] });
    await this.report(info, this.configured(0x84) ? [receipt] : [], handle);
    await handle.end({ type: 'completion', bmps: [] });
  }

  /** Service byte 01: the 04 0F again; 02: no receipt (EP). */
  private async repeatReceipt(serviceByte: number, handle: CommandHandle) {
    await handle.accept();
    const last = this.journal.last();
    if (last) {
      if (serviceByte & 0x01 && last.status_information) {
        const message = decodeMessageBytes(Buffer.from(last.status_information, 'hex'));
        if (message.ok && message.value.type === 'status-information')
          await handle.send(message.value);
      }
      const printer = this.configured(last.kind === 'END_OF_DAY' ? 0x84 : 0x82);
      if (!(serviceByte & 0x02) && printer) await this.print(last.receipts, handle);
    }
    await handle.end({ type: 'completion', bmps: [] });
  }

  // ---- helpers ----

  /** The open batch is overdue for its end-of-day (endOfDayAfterPayments / -Hours). */
  endOfDayDue(): boolean {
    const { endOfDayAfterPayments: afterPayments, endOfDayAfterHours: afterHours } = this.options;
    if (afterPayments === undefined && afterHours === undefined) return false;
    return this.journal.endOfDayDue({
      ...(afterPayments !== undefined ? { afterPayments } : {}),
      ...(afterHours !== undefined ? { afterHours } : {}),
    });
  }

  private terminalStatus(): number {
    return this.endOfDayDue() ? TERMINAL_STATUS_END_OF_DAY_REQUIRED : 0;
  }

  /** 04 0F, then the receipts as print lines. */
  private async report(info: Bmp[], receipts: string[][], handle: CommandHandle) {
    await handle.send({ type: 'status-information', bmps: info });
    await this.print(receipts, handle);
  }

  /** One 06 D1 per line; the last line of each receipt with attribute 81 (last line). */
  private async print(receipts: string[][], handle: CommandHandle) {
    for (const receipt of receipts) {
      for (const [index, text] of receipt.entries()) {
        const line: PrintLine = {
          type: 'print-line',
          attribute: index === receipt.length - 1 ? 0x81 : 0x00,
          text,
        };
        await handle.send(line);
      }
    }
  }

  /** Whether the registration's config byte has every bit of `mask`. */
  private configured(mask: number): boolean {
    return ((this.registration?.config ?? 0) & mask) === mask;
  }

  private numbers(ids: Identifiers) {
    const { traceNumber, receiptNumber, terminalId } = ids;
    return { traceNumber, receiptNumber, terminalId };
  }

  private identifiers(entry: JournalEntry): Identifiers {
    return {
      receiptNumber: entry.receipt_number,
      traceNumber: entry.trace_number,
      terminalId: this.terminalId,
      currency: entry.currency,
      now: this.now(),
    };
  }

  private money(amount: number, currency: number): string {
    return formatAmount(amount, CURRENCIES.get(currency) ?? 'EUR');
  }

  private delayOf(delay: ScenarioDelay): number {
    return delay.kind === 'instant' ? 0 : delay.kind === 'fixed' ? delay.ms : this.delayMs;
  }

  /** Waits `ms`, cut short by the ECR's 06 B0 or the emulator's close. */
  private wait(ms: number, handle: CommandHandle): Promise<Wait> {
    if (this.closed) return Promise.resolve('closed');
    if (handle.abortRequested) return Promise.resolve('aborted');
    if (ms <= 0) return Promise.resolve('elapsed');
    return new Promise((resolve) => {
      const done = (how: Wait) => {
        this.timers.clearTimeout(timer);
        handle.off('abort', onAbort);
        this.closing.delete(onClose);
        resolve(how);
      };
      const onAbort = () => done('aborted');
      const onClose = () => done('closed');
      const timer = this.timers.setTimeout(() => done('elapsed'), ms);
      handle.once('abort', onAbort);
      this.closing.add(onClose);
    });
  }
}
