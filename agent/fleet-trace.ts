/**
 * A trace of the reader line during the last payment, for remote diagnostics
 * (docs/fleet.md, "Diagnostics"): both directions of the native reader's serial line are
 * decoded as they pass, one line of text per frame (as `tps bridge monitor` prints them),
 * from the host's `transaction.start` until the next one. At most DIAGNOSTIC_TRACE_FRAMES
 * frames are kept (the newest), each line cut to 400 characters; secret members are
 * redacted and any run of 12-19 digits is masked to its first 6 and last 4, so that no card
 * number leaves the terminal even from a reader that failed to mask one.
 *
 * A ZVT terminal's line is followed one level up, as the APDUs the driver sends and receives
 * (over serial or TCP alike), from the ECR's authorisation, refund or reversal on; card data
 * and the password are left out of their text (zvt-frame-text.ts, `cardData: 'hidden'`).
 */
import type { Duplex } from 'node:stream';
import type { Frame } from '../firmware-bridge/serial/codec.js';
import { FrameDecoder } from '../firmware-bridge/serial/decoder.js';
import { frameText } from '../firmware-bridge/tools/frame-text.js';
import { apduText } from '../firmware-bridge/tools/zvt-frame-text.js';
import type { ApduChannel } from '../firmware-bridge/zvt/channel.js';
import type { DecodeContext } from '../firmware-bridge/zvt/message-types.js';
import { isCommand } from '../firmware-bridge/zvt/messages.js';
import { DIAGNOSTIC_TRACE_FRAMES } from '../protocol/fleet-diagnostics.js';
import { SECRET_FIELDS } from '../protocol/secrets.js';
import type { Clock } from '../common/clock.js';
import { secretRedactor } from '../common/redact.js';

type Direction = 'host→reader' | 'reader→host';
export interface TracedFrame {
  at: string;
  direction: Direction;
  text: string;
}

const redact = secretRedactor([...SECRET_FIELDS]);
const TEXT_MAX = 400;
/** The ECR commands that start a payment on a ZVT terminal: the trace starts again. */
const ZVT_PAYMENT_STARTS: ReadonlySet<string> = new Set(['authorisation', 'refund', 'reversal']);

/** Card numbers in any text: a run of 12-19 digits keeps its first 6 and last 4. */
export function maskDigitRuns(text: string): string {
  return text.replace(
    /\d{12,19}/g,
    (run) => `${run.slice(0, 6)}${'*'.repeat(run.length - 10)}${run.slice(-4)}`,
  );
}

/**
 * A card number the terminal masked (on a receipt line: `476173******0119`) keeps only its
 * last 4 digits in the trace, as on the customer's copy: the trace leaves the terminal.
 */
export function maskMaskedCardNumbers(text: string): string {
  return text.replace(/[0-9*]{12,19}/g, (run) =>
    run.includes('*') ? `${'*'.repeat(run.length - 4)}${run.slice(-4)}` : run,
  );
}

export class LineTrace {
  private frames: TracedFrame[] = [];
  private dropped = 0;
  private transactionId: string | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly capacity = DIAGNOSTIC_TRACE_FRAMES,
  ) {}

  /** Follows both directions of `stream` (the host's end of the reader line). */
  tap(stream: Duplex): void {
    const fromReader = this.decoder('reader→host');
    const toReader = this.decoder('host→reader');
    stream.on('data', (chunk: Buffer) => fromReader.write(chunk));
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (Buffer.isBuffer(chunk)) toReader.write(chunk);
      return write(chunk, ...rest);
    }) as typeof stream.write;
  }

  /** Follows the APDUs both ways on a ZVT driver's channel (before the driver uses it). */
  tapApdus(channel: ApduChannel): void {
    let context: DecodeContext = {};
    const add = (direction: Direction, apdu: Buffer) => {
      const { text, message } = apduText(apdu, context, false, { cardData: 'hidden' });
      if (direction === 'host→reader' && message && isCommand(message)) {
        context = { command: message.type };
        if (ZVT_PAYMENT_STARTS.has(message.type)) this.restart(undefined);
      }
      this.add(direction, maskMaskedCardNumbers(text));
    };
    channel.on('apdu', (apdu) => add('reader→host', apdu));
    const send = channel.send.bind(channel);
    channel.send = (apdu: Buffer) => {
      add('host→reader', apdu);
      return send(apdu);
    };
  }

  snapshot(): { transactionId?: string; frames: TracedFrame[]; dropped: number } {
    return {
      ...(this.transactionId !== undefined ? { transactionId: this.transactionId } : {}),
      frames: [...this.frames],
      dropped: this.dropped,
    };
  }

  private decoder(direction: Direction): FrameDecoder {
    const decoder = new FrameDecoder();
    decoder.on('data', (frame: Frame) => this.add(direction, frameText(frame, true)));
    decoder.on('error', () => undefined);
    return decoder;
  }

  private add(direction: Direction, raw: string): void {
    if (direction === 'host→reader' && raw.includes(' transaction.start ')) {
      this.restart(/"transaction_id":"([^"]{1,64})"/.exec(raw)?.[1]);
    }
    const text = maskDigitRuns(redact(raw));
    this.frames.push({
      at: this.clock.now().toISOString(),
      direction,
      text: text.length > TEXT_MAX ? `${text.slice(0, TEXT_MAX - 1)}…` : text,
    });
    if (this.frames.length > this.capacity) {
      this.frames.shift();
      this.dropped++;
    }
  }

  private restart(transactionId: string | undefined): void {
    this.frames = [];
    this.dropped = 0;
    this.transactionId = transactionId;
  }
}
