/**
 * The ZVT messages this layer understands, as typed values. Untagged fields at the front of
 * a message (password, config byte, status, attribute, result code) are named properties;
 * the BMP part stays an ordered field list (bmp.ts) read with `readBmps` (bmp-values.ts),
 * so that every decoded message encodes back to the same bytes.
 *
 * Passwords and other BCD values are nibble strings (`'000000'`). Anything with a control
 * field this layer does not know decodes as `other`, with its data untouched.
 */
import type { Bmp } from './bmp.js';
import type { TlvContainer } from './tlv.js';

interface Base {
  /** Decoded from an APDU that used the long length form for fewer than 255 bytes. */
  longLength?: true;
}

// ---- ECR → PT ----

/** 06 00: `<pwd 3> <config> [<currency 2, untagged>] [03 <service>] [06 <TLV>]`. */
export interface Registration extends Base {
  type: 'registration';
  password: string;
  config: number;
  /** ISO 4217 numeric code as BCD nibbles (`'0978'`); absent when not sent. */
  currency?: string;
  bmps: Bmp[];
}

/** 06 01: BMPs only (04 amount, 49, 19, 02, 01, …). */
export interface Authorisation extends Base {
  type: 'authorisation';
  bmps: Bmp[];
}

/** Commands of the form `[<pwd 3>] BMPs` (the password is absent when not sent). */
export interface PasswordCommand<T extends string> extends Base {
  type: T;
  password?: string;
  bmps: Bmp[];
}

/** 06 30: `<pwd> 87 <receipt>` […]. */
export type Reversal = PasswordCommand<'reversal'>;
/** 06 31: `<pwd> 04 <amount>` […]. */
export type Refund = PasswordCommand<'refund'>;
/** 06 50: `<pwd>` [06 TLV]. */
export type EndOfDay = PasswordCommand<'end-of-day'>;
/** 06 20: `<pwd>` [03 <service>]: 01 send the status information again, 02 no receipt. */
export type RepeatReceipt = PasswordCommand<'repeat-receipt'>;
/** 05 01: [`<pwd>` [03 <service>] [06 TLV]]. */
export type StatusEnquiry = PasswordCommand<'status-enquiry'>;

/** 06 02 Log-off; 06 B0 Abort from the ECR. Neither has data. */
export interface LogOff extends Base {
  type: 'log-off';
}
export interface AbortCommand extends Base {
  type: 'abort-command';
}

/** 06 E0: F0 duration, F1-F8 lines, F9 beeps. */
export interface DisplayText extends Base {
  type: 'display-text';
  bmps: Bmp[];
}

export type EcrCommand =
  | Registration
  | Authorisation
  | Reversal
  | Refund
  | EndOfDay
  | RepeatReceipt
  | StatusEnquiry
  | LogOff
  | AbortCommand
  | DisplayText;

// ---- PT → ECR ----

/** 04 FF: `<status> [<timeout>] [06 <TLV 24{07 …}>]`. */
export interface IntermediateStatus extends Base {
  type: 'intermediate-status';
  status: number;
  timeout?: number;
  bmps: Bmp[];
}

/** 04 0F: BMPs (27 result, 04, 0B, 87, …). */
export interface StatusInformation extends Base {
  type: 'status-information';
  bmps: Bmp[];
}

/** 06 D1: `<attribute> <text>` [06 TLV, CardComplete]. */
export interface PrintLine extends Base {
  type: 'print-line';
  attribute: number;
  /** CP437 text, no CR/LF. */
  text: string;
  tlv?: TlvContainer;
}

/** 06 D3: 06 <TLV: 1F07, 1F37, 14, 25{07 …, 09}>. */
export interface PrintTextBlock extends Base {
  type: 'print-text-block';
  bmps: Bmp[];
}

/**
 * 06 0F. After 05 01 its data is `[<LLL version>] <terminal status> [06 TLV]` (`status` is
 * set); after every other command it is BMPs.
 */
export interface Completion extends Base {
  type: 'completion';
  status?: { softwareVersion?: string; terminalStatus: number };
  bmps: Bmp[];
}

/** 06 1E: `[<result code>] [87 …] [<currency> when 6F] [06 TLV]`; `06 1E 00` has no code. */
export interface Abort extends Base {
  type: 'abort';
  resultCode?: number;
  /** Untagged currency after result 6F (wrong currency), as BCD nibbles. */
  currency?: string;
  bmps: Bmp[];
}

export type PtMessage =
  IntermediateStatus | StatusInformation | PrintLine | PrintTextBlock | Completion | Abort;

// ---- both directions ----

/**
 * 80 00 00 (positive), 84 xx … (negative, xx = result code; 84 00 counts as positive).
 * The data is kept as sent (`84 9D 07 04 <amount>` carries a BMP; PZ#49 saw `84 1E 01 7D`);
 * `bmps` is set when it parses as BMPs.
 */
export interface Ack extends Base {
  type: 'ack';
  cls: 0x80 | 0x84;
  code: number;
  data: Buffer;
  bmps?: Bmp[];
}

/** Any other control field, data untouched. */
export interface OtherMessage extends Base {
  type: 'other';
  cls: number;
  ins: number;
  data: Buffer;
}

export type ZvtMessage = EcrCommand | PtMessage | Ack | OtherMessage;
export type ZvtMessageType = ZvtMessage['type'];

/** What the decoder must know to read a 06 0F: the command it completes. */
export interface DecodeContext {
  /** The running command; `status-enquiry` makes 06 0F the status form. */
  command?: EcrCommand['type'];
}

/** Control fields of the typed messages. */
export const CONTROL = {
  registration: [0x06, 0x00],
  authorisation: [0x06, 0x01],
  'log-off': [0x06, 0x02],
  'repeat-receipt': [0x06, 0x20],
  reversal: [0x06, 0x30],
  refund: [0x06, 0x31],
  'end-of-day': [0x06, 0x50],
  'abort-command': [0x06, 0xb0],
  'display-text': [0x06, 0xe0],
  'status-enquiry': [0x05, 0x01],
  'intermediate-status': [0x04, 0xff],
  'status-information': [0x04, 0x0f],
  'print-line': [0x06, 0xd1],
  'print-text-block': [0x06, 0xd3],
  completion: [0x06, 0x0f],
  abort: [0x06, 0x1e],
} as const satisfies Record<Exclude<ZvtMessageType, 'ack' | 'other'>, readonly [number, number]>;
