/**
 * The ECR side of the ZVT protocol over any ApduChannel (serial link or TCP): one command
 * at a time, the PT-master phase answered, the outcome returned.
 *
 * ```
 *   run(cmd) ──▶ cmd ──────────────────────────▶ PT     T3 (5 s) for the acceptance
 *            ◀── 80 00 00 (84 xx: refused) ──────        then the PT is master: T4 (180 s),
 *            ◀── 04 FF / 04 0F / 06 D1 / 06 D3 ─        restarted by every PT message
 *            ── 80 00 00 (each; 04 0F: the hook's answer) ▶
 *            ◀── 06 0F completion | 06 1E abort ─
 *            ── 80 00 00 ──▶   run() resolves with the outcome
 * ```
 *
 * Why it looks like this, for a CardReader driver on top of it:
 * - `run()` resolves with everything the PT said (each 04 0F, print lines, the final 06 0F
 *   or 06 1E), and the same arrives as events while it runs: a driver maps 04 FF to
 *   `progress`, the final 04 0F to `result`, and the print lines to receipts.
 * - A failure after the command left says so (`ZvtError.outcomeUnknown`): the PT may have
 *   charged. The driver then reconciles with Repeat Receipt (06 20, service 01), the
 *   notes' recovery tool (§8), instead of reporting a failure.
 * - `answerStatusInformation` decides the ECR's answer to each 04 0F. In issue-of-goods
 *   mode (BMP 02 sent) that is the pause point: `84 9C 00` asks the PT to repeat later,
 *   `84 66 00` makes it reverse, `84 9D` + amount confirms a smaller amount — so
 *   `customer_identified` / `continue` / `cancel` map onto it.
 * - `abort()` sends 06 B0 while the PT is master; the command still ends with the PT's own
 *   06 1E (or 06 0F when it completed first: that result stands, §7.2).
 * - Each command is bounded whatever the PT sends (`limits`): the messages and bytes it may
 *   bring (what the outcome keeps of print lines and text blocks is among them) and its whole
 *   time, which PT messages do not extend (they restart T4 only). Past a bound, or past
 *   `maxMessages` outside any command, the session lets go of the line as if it were lost:
 *   the command fails with `LIMIT_EXCEEDED` (`outcomeUnknown`, `disconnected`), and the
 *   driver reconciles on a new line as after a crash.
 *
 * Liberal in what it accepts: a PT message instead of 80 00 00 counts as acceptance (KZ);
 * 84 00 is positive (PZ); a PT message outside a command is answered (80 00 00, or
 * 84 66 00 for a 04 0F, as PZ, so an unclaimed payment in issue-of-goods mode is reversed)
 * and reported as `unexpected`.
 */
import { EventEmitter } from 'node:events';
import { systemTimers, type Timers } from '../../common/clock.js';
import { controlName, decodeApdu } from './apdu.js';
import { readBmps, type BmpValues } from './bmp-values.js';
import type { ApduChannel } from './channel.js';
import { ZvtError } from './errors.js';
import type {
  Abort,
  Ack,
  Completion,
  EcrCommand,
  IntermediateStatus,
  PrintLine,
  PrintTextBlock,
  PtMessage,
  StatusInformation,
  ZvtMessage,
} from './message-types.js';
import {
  decodeMessage,
  isPositiveAck,
  isPtMessage,
  messageBytes,
  negativeAck,
  positiveAck,
} from './messages.js';

/** Bounds of one command, whatever the PT sends (docs/zvt.md, "Bounds"). */
export interface ZvtCommandLimits {
  /**
   * APDUs the PT may send during one command, of any kind (04 FF, 04 0F, 06 D1, 06 D3, …);
   * also between two commands (default 5000: a long end-of-day prints a few hundred lines).
   */
  maxMessages: number;
  /** Their bytes together (default 1 MiB, some hundred times a payment's receipts). */
  maxBytes: number;
  /** The whole command, from run() to its end, in ms (default 600 000); T4 is within it. */
  maxCommandMs: number;
}

export const DEFAULT_COMMAND_LIMITS: Readonly<ZvtCommandLimits> = {
  maxMessages: 5000,
  maxBytes: 1024 * 1024,
  maxCommandMs: 600_000,
};

export interface ZvtSessionOptions {
  /** Wait for the PT to accept a command (80 00 00), from when it left, in ms (default 5000). */
  t3Ms?: number;
  /** Longest silence of the PT while it is master, in ms (default 180 000). */
  t4Ms?: number;
  /** The answer to each 04 0F (default 80 00 00). T4 is paused while it is pending. */
  answerStatusInformation?: (info: StatusInformation, command: EcrCommand) => Ack | Promise<Ack>;
  /**
   * A 04 0F with a result other than 00 ends the command once answered, without waiting
   * for 06 0F / 06 1E (CCV A920 sends none; zvt-notes §9). A final message that still
   * comes is answered as `unexpected`. Default false.
   */
  endOnErrorStatusInformation?: boolean;
  /** Bounds of each command (default DEFAULT_COMMAND_LIMITS). */
  limits?: Partial<ZvtCommandLimits>;
  timers?: Timers;
}

/** How a command ended. */
export interface ZvtOutcome {
  command: EcrCommand['type'];
  /**
   * completed: 06 0F. aborted: 06 1E. refused: 84 xx instead of 80 00 00.
   * acknowledged: a command that ends with its acceptance (06 02, 06 B0, 06 E0).
   */
  kind: 'completed' | 'aborted' | 'refused' | 'acknowledged';
  /** 06 1E's or 84's code; else BMP 27 of the last 04 0F. */
  resultCode?: number;
  /** The named values of the last 04 0F (amount, receipt and trace numbers, card, …). */
  result?: BmpValues;
  completion?: Completion;
  abort?: Abort;
  /** The 84 xx refusal. */
  refusal?: Ack;
  statusInformation: StatusInformation[];
  printLines: PrintLine[];
  printTextBlocks: PrintTextBlock[];
}

export type ZvtSessionEvents = {
  /** The PT took the running command (80 00 00, or a PT message in its place). */
  accepted: [command: EcrCommand['type']];
  'intermediate-status': [message: IntermediateStatus];
  'status-information': [message: StatusInformation];
  'print-line': [message: PrintLine];
  'print-text-block': [message: PrintTextBlock];
  /** Something outside the protocol: what arrived and how it was answered. */
  unexpected: [info: { apdu: Buffer; reason: string }];
  close: [error?: ZvtError];
};

/**
 * Commands whose acceptance is their end: 06 02 and 06 B0 (PZ's endAfterCommandCompletion),
 * and 06 E0 (the notes know no completion for it). A 06 0F that follows anyway is answered
 * as `unexpected`.
 */
const ENDS_WITH_ACK: ReadonlySet<EcrCommand['type']> = new Set([
  'log-off',
  'abort-command',
  'display-text',
]);

interface Running {
  command: EcrCommand;
  /** done: the final message arrived; the last answer is still being written. */
  phase: 'sending' | 'awaiting-ack' | 'pt-master' | 'done';
  outcome: ZvtOutcome;
  timer?: unknown;
  /** The command's whole time (limits.maxCommandMs), not restarted by anything. */
  ceiling: unknown;
  /** APDUs and their bytes the PT sent during the command. */
  received: { messages: number; bytes: number };
  /** Answers to the PT being written; the outcome waits for them. */
  answering: Promise<unknown>;
  resolve: (outcome: ZvtOutcome) => void;
  reject: (error: ZvtError) => void;
  aborts: ((accepted: boolean) => void)[];
}

export class ZvtSession extends EventEmitter<ZvtSessionEvents> {
  private readonly t3Ms: number;
  private readonly t4Ms: number;
  private readonly timers: Timers;
  private readonly answerStatusInformation: NonNullable<
    ZvtSessionOptions['answerStatusInformation']
  >;
  private readonly endOnErrorStatusInformation: boolean;
  readonly limits: Readonly<ZvtCommandLimits>;
  private running: Running | undefined;
  /** APDUs received since the last command started, outside any command. */
  private receivedOutside = 0;
  private closedError: ZvtError | undefined;

  constructor(
    readonly channel: ApduChannel,
    options: ZvtSessionOptions = {},
  ) {
    super();
    this.t3Ms = options.t3Ms ?? 5000;
    this.t4Ms = options.t4Ms ?? 180_000;
    this.timers = options.timers ?? systemTimers;
    this.answerStatusInformation = options.answerStatusInformation ?? (() => positiveAck());
    this.endOnErrorStatusInformation = options.endOnErrorStatusInformation ?? false;
    this.limits = { ...DEFAULT_COMMAND_LIMITS, ...options.limits };
    channel.on('apdu', this.onApdu);
    channel.once('close', this.onClose);
  }

  /** The command running, if any. */
  get current(): EcrCommand['type'] | undefined {
    return this.running?.command.type;
  }

  /**
   * Runs one command to its end. Rejects with a ZvtError: BUSY or CLOSED (nothing sent),
   * T3_TIMEOUT, T4_TIMEOUT, NO_LINK_ACK, PORT_CLOSED, LIMIT_EXCEEDED (`outcomeUnknown`:
   * reconcile; after LIMIT_EXCEEDED and PORT_CLOSED on a new line).
   */
  run(command: EcrCommand): Promise<ZvtOutcome> {
    if (this.closedError)
      return Promise.reject(new ZvtError('CLOSED', 'the ZVT session is closed'));
    if (this.running) {
      return Promise.reject(new ZvtError('BUSY', `${this.running.command.type} is still running`));
    }
    return new Promise((resolve, reject) => {
      const running: Running = {
        command,
        phase: 'sending',
        outcome: {
          command: command.type,
          kind: 'completed',
          statusInformation: [],
          printLines: [],
          printTextBlocks: [],
        },
        answering: Promise.resolve(),
        resolve,
        reject,
        aborts: [],
        received: { messages: 0, bytes: 0 },
        ceiling: undefined,
      };
      running.ceiling = this.timers.setTimeout(() => {
        if (this.running === running) {
          this.dropLine(`the command ran for ${this.limits.maxCommandMs} ms`);
        }
      }, this.limits.maxCommandMs);
      this.running = running;
      this.receivedOutside = 0;
      this.channel.send(messageBytes(command)).then(
        () => {
          if (this.running !== running || running.phase !== 'sending') return;
          running.phase = 'awaiting-ack';
          this.arm(running, this.t3Ms, 'T3_TIMEOUT', `no acceptance of ${command.type} within T3`);
        },
        (error: ZvtError) => this.fail(running, error),
      );
    });
  }

  /**
   * Asks the PT to abort the running command (06 B0). Resolves true when the PT accepted
   * the request, false when it refused it or the command ended first; the command's own
   * outcome still arrives from run(). Without a running command, 06 B0 is run on its own.
   */
  async abort(): Promise<boolean> {
    const running = this.running;
    if (!running) return (await this.run({ type: 'abort-command' })).kind === 'acknowledged';
    const answered = new Promise<boolean>((resolve) => running.aborts.push(resolve));
    await this.channel.send(messageBytes({ type: 'abort-command' }));
    return answered;
  }

  /** Stops the session and its channel; a running command rejects with CLOSED. */
  async close(): Promise<void> {
    await this.channel.close();
    this.onClose();
  }

  // ---- receiving ----

  private readonly onApdu = (bytes: Buffer): void => {
    const running = this.running;
    if (!this.withinLimits(running, bytes)) return;
    const apdu = decodeApdu(bytes);
    const message = apdu.ok ? decodeMessage(apdu.value, { command: running?.command.type }) : apdu;
    if (!message.ok) {
      const { code, message: text, offset } = message.error;
      return this.unexpected(
        bytes,
        `undecodable (${code} at ${offset}: ${text})`,
        negativeAck(0x9a),
      );
    }
    if (!running || running.phase === 'sending' || running.phase === 'done') {
      return this.outside(bytes, message.value);
    }
    const value = message.value;
    if (value.type === 'ack') return this.onAck(running, value);
    if (!isPtMessage(value)) {
      // Class 04 is PT information (04 01 date/time, …): taken; anything else is refused.
      const information = value.type === 'other' && value.cls === 0x04;
      const reason = `${value.type === 'other' ? controlName(value) : value.type} is not a PT message`;
      return this.unexpected(bytes, reason, information ? positiveAck() : negativeAck(0x83));
    }
    if (running.phase === 'awaiting-ack') {
      running.phase = 'pt-master';
      this.emit('accepted', running.command.type);
    }
    this.onPtMessage(running, value);
  };

  private onAck(running: Running, ack: Ack): void {
    if (running.phase === 'pt-master') {
      // The answer to our 06 B0.
      for (const settle of running.aborts.splice(0)) settle(isPositiveAck(ack));
      return;
    }
    if (!isPositiveAck(ack)) {
      running.outcome.kind = 'refused';
      running.outcome.resultCode = ack.code;
      running.outcome.refusal = ack;
      return this.finish(running);
    }
    if (ENDS_WITH_ACK.has(running.command.type)) {
      running.outcome.kind = 'acknowledged';
      return this.finish(running);
    }
    running.phase = 'pt-master';
    this.emit('accepted', running.command.type);
    this.arm(
      running,
      this.t4Ms,
      'T4_TIMEOUT',
      `the PT was silent for T4 during ${running.command.type}`,
    );
  }

  private onPtMessage(running: Running, message: PtMessage): void {
    const { outcome } = running;
    this.disarm(running);
    switch (message.type) {
      case 'intermediate-status':
        this.emit('intermediate-status', message);
        return this.answer(running, positiveAck(), true);
      case 'print-line':
        outcome.printLines.push(message);
        this.emit('print-line', message);
        return this.answer(running, positiveAck(), true);
      case 'print-text-block':
        outcome.printTextBlocks.push(message);
        this.emit('print-text-block', message);
        return this.answer(running, positiveAck(), true);
      case 'status-information': {
        outcome.statusInformation.push(message);
        outcome.result = readBmps(message.bmps);
        if (outcome.result.resultCode !== undefined) outcome.resultCode = outcome.result.resultCode;
        this.emit('status-information', message);
        const answer = Promise.resolve()
          .then(() => this.answerStatusInformation(message, running.command))
          .catch(() => positiveAck());
        const ends =
          this.endOnErrorStatusInformation &&
          outcome.result.resultCode !== undefined &&
          outcome.result.resultCode !== 0;
        running.answering = answer.then((ack) => this.answer(running, ack, !ends));
        if (ends) {
          outcome.kind = 'aborted';
          this.finish(running);
        }
        return;
      }
      case 'completion':
        outcome.kind = 'completed';
        outcome.completion = message;
        this.answer(running, positiveAck(), false);
        return this.finish(running);
      case 'abort':
        outcome.kind = 'aborted';
        outcome.abort = message;
        if (message.resultCode !== undefined) outcome.resultCode = message.resultCode;
        this.answer(running, positiveAck(), false);
        return this.finish(running);
    }
  }

  /** Writes an answer to the PT; `rearm`: the PT stays master, T4 runs again once sent. */
  private answer(running: Running, ack: Ack, rearm: boolean): void {
    const sent = this.channel.send(messageBytes(ack)).catch(() => undefined);
    running.answering = Promise.all([running.answering, sent]);
    if (rearm && this.running === running) {
      void sent.then(() => {
        if (this.running === running && running.timer === undefined) {
          this.arm(
            running,
            this.t4Ms,
            'T4_TIMEOUT',
            `the PT was silent for T4 during ${running.command.type}`,
          );
        }
      });
    }
  }

  /** A message while no command runs. */
  private outside(bytes: Buffer, message: ZvtMessage): void {
    if (message.type === 'ack') {
      this.emit('unexpected', { apdu: bytes, reason: 'an acknowledgement outside a command' });
      return;
    }
    const answer =
      message.type === 'status-information'
        ? negativeAck(0x66)
        : isPtMessage(message)
          ? positiveAck()
          : negativeAck(0x83);
    this.unexpected(bytes, `${message.type} outside a command`, answer);
  }

  private unexpected(apdu: Buffer, reason: string, answer: Ack): void {
    void this.channel.send(messageBytes(answer)).catch(() => undefined);
    this.emit('unexpected', { apdu, reason });
  }

  // ---- bounds ----

  /** Counts an APDU against the running command's bounds (or those between commands). */
  private withinLimits(running: Running | undefined, bytes: Buffer): boolean {
    const { maxMessages, maxBytes } = this.limits;
    if (!running || running.phase === 'sending' || running.phase === 'done') {
      if (++this.receivedOutside <= maxMessages) return true;
      this.dropLine(`the terminal sent more than ${maxMessages} messages outside a command`);
      return false;
    }
    const received = running.received;
    received.messages++;
    received.bytes += bytes.length;
    if (received.messages > maxMessages) {
      this.dropLine(`the terminal sent more than ${maxMessages} messages`);
    } else if (received.bytes > maxBytes) {
      this.dropLine(`the terminal sent more than ${maxBytes} bytes`);
    } else return true;
    return false;
  }

  /**
   * Lets go of the line, as if it were lost: a PT past a bound is not trusted to end the
   * command, and a new line starts from nothing (the driver reconciles on it). A running
   * command fails with LIMIT_EXCEEDED; `close` says the same.
   */
  dropLine(what: string): void {
    if (this.closedError) return;
    this.onClose(new ZvtError('LIMIT_EXCEEDED', `${what}; the line was dropped`));
    void this.channel.close().catch(() => undefined);
  }

  // ---- ending ----

  private arm(running: Running, ms: number, code: 'T3_TIMEOUT' | 'T4_TIMEOUT', text: string): void {
    this.disarm(running);
    running.timer = this.timers.setTimeout(() => {
      running.timer = undefined;
      this.fail(running, new ZvtError(code, `${text} (${ms} ms); the outcome is unknown`));
    }, ms);
  }

  private disarm(running: Running): void {
    if (running.timer === undefined) return;
    this.timers.clearTimeout(running.timer);
    running.timer = undefined;
  }

  private finish(running: Running): void {
    if (this.running !== running || running.phase === 'done') return;
    running.phase = 'done';
    this.disarm(running);
    for (const settle of running.aborts.splice(0)) settle(false);
    // The next command may start only once our last answer is on its way.
    void running.answering.then(() => {
      if (this.running !== running) return;
      this.running = undefined;
      this.timers.clearTimeout(running.ceiling);
      running.resolve(running.outcome);
    });
  }

  private fail(running: Running, error: ZvtError): void {
    if (this.running !== running) return;
    this.disarm(running);
    this.timers.clearTimeout(running.ceiling);
    this.running = undefined;
    for (const settle of running.aborts.splice(0)) settle(false);
    running.reject(error);
  }

  private readonly onClose = (error?: ZvtError): void => {
    if (this.closedError) return;
    this.closedError = error ?? new ZvtError('CLOSED', 'the ZVT session was closed');
    this.channel.off('apdu', this.onApdu);
    const running = this.running;
    if (running) {
      const sent = running.phase !== 'sending' || error !== undefined;
      this.fail(
        running,
        new ZvtError(
          this.closedError.code,
          `${this.closedError.message} during ${running.command.type}`,
          {
            cause: error,
            outcomeUnknown: sent || this.closedError.outcomeUnknown,
          },
        ),
      );
    }
    this.emit('close', error);
  };
}
