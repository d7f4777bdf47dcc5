/**
 * The PT side of the ZVT protocol over any ApduChannel: it reads the ECR's commands and
 * lets a handler (the emulated terminal) answer them, one at a time, as master.
 *
 * ```
 *   ECR cmd ──▶ 'command' (command, handle)   handle.accept()  ──▶ 80 00 00
 *                                             handle.refuse(xx) ──▶ 84 xx 00 (the end)
 *                                             handle.send(04 FF …) ──▶ resolves with the ECR's answer
 *                                             handle.end(06 0F | 06 1E) ──▶ idle again
 *   06 B0 while master ──▶ 80 00 00 at once, handle.abortRequested = true, 'abort' on the handle
 * ```
 *
 * Liberal in what it accepts: any acknowledgement answers the message waiting for one
 * (84 9C / 84 66 / 84 9D are the handler's to interpret); a command while another runs is
 * refused with 84 83 00, an undecodable one with 84 9A 00 (ZVT protocol error), an unknown
 * control field with 84 83 00 (function not possible).
 */
import { EventEmitter } from 'node:events';
import { systemTimers, type Timers } from '../../common/clock.js';
import { controlName } from './apdu.js';
import type { ApduChannel } from './channel.js';
import { ZvtError } from './errors.js';
import type { Abort, Ack, Completion, EcrCommand, PtMessage } from './message-types.js';
import {
  decodeMessageBytes,
  isCommand,
  messageBytes,
  negativeAck,
  positiveAck,
} from './messages.js';

export interface PtSessionOptions {
  /** How long the ECR has to answer a PT message, in ms (default 5000, as T3). */
  answerTimeoutMs?: number;
  timers?: Timers;
}

/** One command being served. */
export class CommandHandle extends EventEmitter<{ abort: []; ended: [] }> {
  /** The ECR sent 06 B0 while this command ran. */
  abortRequested = false;
  /** accept() or refuse() was called. */
  answered = false;
  ended = false;

  constructor(
    readonly command: EcrCommand,
    private readonly session: ZvtPtSession,
  ) {
    super();
  }

  /** 80 00 00: the PT takes the command and becomes master. */
  accept(): Promise<void> {
    this.answered = true;
    return this.session.write(positiveAck());
  }

  /** 80 00 00 for a command that ends with its acceptance (06 02, 06 B0, 06 E0). */
  async acknowledge(): Promise<void> {
    this.answered = true;
    this.session.release(this);
    await this.session.write(positiveAck());
  }

  /** 84 xx 00: refused; the command is over. */
  async refuse(code: number): Promise<void> {
    this.answered = true;
    this.session.release(this);
    await this.session.write(negativeAck(code));
  }

  /** Gives up the command without a final message (the ECR stopped answering). */
  abandon(): void {
    this.session.release(this);
  }

  /** Sends a PT message; resolves with the ECR's answer. Rejects ANSWER_TIMEOUT, CLOSED, … */
  send(message: PtMessage): Promise<Ack> {
    return this.session.exchange(message);
  }

  /** Sends the final 06 0F or 06 1E; the session is free for the next command after it. */
  async end(message: Completion | Abort): Promise<Ack | undefined> {
    try {
      // Released as the ECR's answer arrives: its next command may be in the same read.
      return await this.session.exchange(message, this);
    } catch {
      return undefined;
    } finally {
      this.session.release(this);
    }
  }
}

export type PtSessionEvents = {
  command: [command: EcrCommand, handle: CommandHandle];
  /** What the session refused by itself, and why (for logs). */
  refused: [info: { apdu: Buffer; reason: string }];
  close: [error?: ZvtError];
};

interface Waiting {
  /** Set when the message is the command's last: the command ends with the answer. */
  last?: CommandHandle;
  resolve: (ack: Ack) => void;
  reject: (error: ZvtError) => void;
  timer: unknown;
}

export class ZvtPtSession extends EventEmitter<PtSessionEvents> {
  private readonly answerTimeoutMs: number;
  private readonly timers: Timers;
  private current: CommandHandle | undefined;
  private waiting: Waiting | undefined;
  private closedFlag = false;

  constructor(
    readonly channel: ApduChannel,
    options: PtSessionOptions = {},
  ) {
    super();
    this.answerTimeoutMs = options.answerTimeoutMs ?? 5000;
    this.timers = options.timers ?? systemTimers;
    channel.on('apdu', this.onApdu);
    channel.once('close', this.onClose);
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  async close(): Promise<void> {
    await this.channel.close();
    this.onClose();
  }

  /** @internal Writes an APDU; a write failure is the channel's close, reported there. */
  async write(message: Ack | PtMessage): Promise<void> {
    await this.channel.send(messageBytes(message)).catch(() => undefined);
  }

  /** @internal Sends a message and waits for the ECR's acknowledgement. */
  exchange(message: PtMessage, last?: CommandHandle): Promise<Ack> {
    if (this.closedFlag) return Promise.reject(new ZvtError('CLOSED', 'the PT session is closed'));
    return new Promise((resolve, reject) => {
      const timer = this.timers.setTimeout(() => {
        if (this.waiting?.timer !== timer) return;
        this.waiting = undefined;
        reject(
          new ZvtError(
            'ANSWER_TIMEOUT',
            `the ECR did not answer ${message.type} within ${this.answerTimeoutMs} ms`,
          ),
        );
      }, this.answerTimeoutMs);
      this.waiting = { resolve, reject, timer, ...(last ? { last } : {}) };
      this.channel.send(messageBytes(message)).catch((error: ZvtError) => {
        if (this.waiting?.timer !== timer) return;
        this.timers.clearTimeout(timer);
        this.waiting = undefined;
        reject(error);
      });
    });
  }

  /** @internal The handle's command is over. */
  release(handle: CommandHandle): void {
    if (this.current === handle) this.current = undefined;
    if (handle.ended) return;
    handle.ended = true;
    handle.emit('ended');
  }

  private readonly onApdu = (bytes: Buffer): void => {
    const decoded = decodeMessageBytes(bytes, { command: this.current?.command.type });
    if (!decoded.ok) {
      const { code, offset, message } = decoded.error;
      return this.refuse(bytes, 0x9a, `undecodable (${code} at ${offset}: ${message})`);
    }
    const message = decoded.value;
    if (message.type === 'ack') {
      const waiting = this.waiting;
      if (!waiting) return;
      this.waiting = undefined;
      this.timers.clearTimeout(waiting.timer);
      if (waiting.last) this.release(waiting.last);
      waiting.resolve(message);
      return;
    }
    const current = this.current;
    if (message.type === 'abort-command' && current) {
      void this.write(positiveAck());
      current.abortRequested = true;
      current.emit('abort');
      return;
    }
    if (!isCommand(message)) {
      const name = message.type === 'other' ? controlName(message) : message.type;
      return this.refuse(bytes, 0x83, `${name} is not a command this PT runs`);
    }
    if (current) return this.refuse(bytes, 0x83, `busy with ${current.command.type}`);
    const handle = new CommandHandle(message, this);
    this.current = handle;
    this.emit('command', message, handle);
  };

  private refuse(apdu: Buffer, code: number, reason: string): void {
    void this.write(negativeAck(code));
    this.emit('refused', { apdu, reason });
  }

  private readonly onClose = (error?: ZvtError): void => {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.channel.off('apdu', this.onApdu);
    const waiting = this.waiting;
    this.waiting = undefined;
    if (waiting) {
      this.timers.clearTimeout(waiting.timer);
      waiting.reject(error ?? new ZvtError('CLOSED', 'the PT session was closed'));
    }
    this.emit('close', error);
  };
}
