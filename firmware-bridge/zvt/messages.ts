/**
 * APDU ⇄ typed message (message-types.ts). `decodeMessage` never throws: hostile bytes give
 * `{ ok: false, error: { code, message, offset } }`, the offset counted from the first byte
 * of the APDU. A control field this layer does not know is not an error: it decodes as
 * `other` with its data untouched. `encodeMessage(decodeMessage(x))` is `x` for every APDU
 * that decodes.
 *
 * The builders at the end make the messages each side sends most (acks, the minimal
 * commands, print lines), so callers do not assemble bytes.
 */
import { decodeApdu, encodeApdu, type Apdu } from './apdu.js';
import type { Bmp } from './bmp.js';
import { decodePasswordCommand, decodeRegistration, encodeCommandData } from './ecr-commands.js';
import { decoded, shifted, type Decoded } from './errors.js';
import { decodeBmpsAt } from './bmp.js';
import {
  CONTROL,
  type Ack,
  type DecodeContext,
  type EcrCommand,
  type PtMessage,
  type ZvtMessage,
} from './message-types.js';
import {
  decodeAbort,
  decodeAck,
  decodeCompletion,
  decodeIntermediateStatus,
  decodePrintLine,
  encodePtData,
} from './pt-messages.js';

const BY_CONTROL = new Map<number, keyof typeof CONTROL>(
  Object.entries(CONTROL).map(([type, [cls, ins]]) => [
    (cls << 8) | ins,
    type as keyof typeof CONTROL,
  ]),
);

/** The message in one APDU's bytes. */
export function decodeMessageBytes(
  bytes: Uint8Array,
  context: DecodeContext = {},
): Decoded<ZvtMessage> {
  const apdu = decodeApdu(bytes);
  return apdu.ok ? decodeMessage(apdu.value, context) : apdu;
}

export function decodeMessage(apdu: Apdu, context: DecodeContext = {}): Decoded<ZvtMessage> {
  const header = apdu.data.length >= 0xff || apdu.longLength ? 5 : 3;
  const result = decodeData(apdu, context);
  if (!result.ok) return shifted(result, header);
  if (apdu.longLength) result.value.longLength = true;
  return result;
}

function decodeData(apdu: Apdu, context: DecodeContext): Decoded<ZvtMessage> {
  const { cls, ins, data } = apdu;
  if (cls === 0x80 || cls === 0x84) return decoded(decodeAck(cls, ins, data));
  const type = BY_CONTROL.get((cls << 8) | ins);
  const bmps = (): Decoded<Bmp[]> => decodeBmpsAt(data, 0, 0);
  const withBmps = <T extends ZvtMessage['type']>(t: T): Decoded<ZvtMessage> => {
    const fields = bmps();
    return fields.ok ? decoded({ type: t, bmps: fields.value } as ZvtMessage) : fields;
  };
  switch (type) {
    case undefined:
      return decoded({ type: 'other', cls, ins, data });
    case 'registration':
      return decodeRegistration(data);
    case 'authorisation':
    case 'display-text':
    case 'status-information':
    case 'print-text-block':
      return withBmps(type);
    case 'reversal':
    case 'refund':
    case 'end-of-day':
    case 'repeat-receipt':
    case 'status-enquiry':
      return decodePasswordCommand(type, data);
    case 'log-off':
    case 'abort-command':
      // Liberal: data on a command that has none is ignored, as long as it is well-formed.
      return data.length === 0 ? decoded({ type }) : decoded({ type: 'other', cls, ins, data });
    case 'intermediate-status':
      return decodeIntermediateStatus(data);
    case 'print-line':
      return decodePrintLine(data);
    case 'completion':
      return decodeCompletion(data, context);
    case 'abort':
      return decodeAbort(data);
  }
}

export function encodeMessage(message: ZvtMessage): Apdu {
  const apdu = ((): Apdu => {
    switch (message.type) {
      case 'ack':
        return { cls: message.cls, ins: message.code, data: message.data };
      case 'other':
        return { cls: message.cls, ins: message.ins, data: message.data };
      default: {
        const [cls, ins] = CONTROL[message.type];
        return {
          cls,
          ins,
          data: isCommand(message) ? encodeCommandData(message) : encodePtData(message),
        };
      }
    }
  })();
  if (message.longLength && apdu.data.length < 0xff) apdu.longLength = true;
  return apdu;
}

/** The APDU bytes of a message. */
export function messageBytes(message: ZvtMessage): Buffer {
  return encodeApdu(encodeMessage(message));
}

const COMMANDS: ReadonlySet<string> = new Set<EcrCommand['type']>([
  'registration',
  'authorisation',
  'reversal',
  'refund',
  'end-of-day',
  'repeat-receipt',
  'status-enquiry',
  'log-off',
  'abort-command',
  'display-text',
]);

export function isCommand(message: ZvtMessage): message is EcrCommand {
  return COMMANDS.has(message.type);
}

const PT_MESSAGES: ReadonlySet<string> = new Set<PtMessage['type']>([
  'intermediate-status',
  'status-information',
  'print-line',
  'print-text-block',
  'completion',
  'abort',
]);

export function isPtMessage(message: ZvtMessage): message is PtMessage {
  return PT_MESSAGES.has(message.type);
}

/** 80 00 00, and 84 00 (PZ treats it as positive; ET calls it so). */
export function isPositiveAck(message: ZvtMessage): boolean {
  return message.type === 'ack' && (message.cls === 0x80 || message.code === 0x00);
}

// ---- builders ----

/** `80 00 00`. */
export const positiveAck = (): Ack => ({
  type: 'ack',
  cls: 0x80,
  code: 0x00,
  data: Buffer.alloc(0),
});

/** `84 <code> 00`, or with BMPs (`84 9D 07 04 <amount>`: partial issue of goods). */
export function negativeAck(code: number, bmps: Bmp[] = []): Ack {
  const data =
    bmps.length === 0 ? Buffer.alloc(0) : encodeMessage({ type: 'status-information', bmps }).data;
  const ack: Ack = { type: 'ack', cls: 0x84, code, data };
  if (bmps.length > 0) ack.bmps = bmps;
  return ack;
}
