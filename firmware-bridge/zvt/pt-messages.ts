/**
 * Data layouts of the PT → ECR messages (zvt-notes §5.1, §5.7, §5.8) and of the
 * acknowledgements. Where the untagged head of a message is ambiguous the reading seen in
 * captures is tried first and the other one after it:
 *
 * - 04 FF: `<status> <timeout> BMPs` first (every capture with more than the status byte
 *   has the timeout), then `<status> BMPs`.
 * - 06 D1: the text runs to the end, unless a BMP 06 that exactly fills the rest follows it
 *   (CardComplete appends TLV after the text).
 * - 06 0F: after 05 01, `[LLL version] <status> [06 TLV]`; otherwise BMPs. Without the
 *   command known, BMPs first and the status form when they do not parse (ET's rule).
 * - 06 1E: `<code>` then BMPs; for code 6F an untagged currency may precede them.
 */
import { decodeBmp, decodeBmps, encodeBmp, encodeBmps } from './bmp.js';
import {
  bcdFromNibbles,
  decodeCp437,
  encodeCp437,
  nibblesOf,
  readVarLength,
  varLengthPrefix,
} from './encodings.js';
import { decoded, failure, type Decoded } from './errors.js';
import type {
  Abort,
  Ack,
  Completion,
  DecodeContext,
  IntermediateStatus,
  PrintLine,
  PtMessage,
} from './message-types.js';

export function decodeIntermediateStatus(data: Buffer): Decoded<IntermediateStatus> {
  const status = data[0];
  if (status === undefined) return failure('missing-field', '04 FF needs a status byte', 0);
  const base = { type: 'intermediate-status' as const, status };
  if (data.length === 1) return decoded({ ...base, bmps: [] });
  const withTimeout = decodeBmps(data, 2);
  if (withTimeout.ok)
    return decoded({ ...base, timeout: data[1] as number, bmps: withTimeout.value });
  const without = decodeBmps(data, 1);
  return without.ok ? decoded({ ...base, bmps: without.value }) : withTimeout;
}

export function decodePrintLine(data: Buffer): Decoded<PrintLine> {
  const attribute = data[0];
  if (attribute === undefined) return failure('missing-field', '06 D1 needs an attribute byte', 0);
  for (let at = data.indexOf(0x06, 1); at !== -1; at = data.indexOf(0x06, at + 1)) {
    const tlv = decodeBmp(data, at);
    if (tlv.ok && tlv.value.bmp.format === 'tlv' && at + tlv.value.size === data.length) {
      return decoded({
        type: 'print-line',
        attribute,
        text: decodeCp437(data.subarray(1, at)),
        tlv: tlv.value.bmp.value,
      });
    }
  }
  return decoded({ type: 'print-line', attribute, text: decodeCp437(data.subarray(1)) });
}

export function decodeCompletion(data: Buffer, context: DecodeContext): Decoded<Completion> {
  if (context.command === 'status-enquiry') return statusCompletion(data);
  const first = data[0];
  // A 06 0F starting Fx after an unknown command is taken for the status form when that parses.
  if (context.command === undefined && first !== undefined && first >= 0xf0 && first <= 0xf9) {
    const status = statusCompletion(data);
    if (status.ok) return status;
  }
  const bmps = decodeBmps(data);
  if (bmps.ok || context.command !== undefined) {
    return bmps.ok ? decoded({ type: 'completion', bmps: bmps.value }) : bmps;
  }
  const status = statusCompletion(data);
  return status.ok ? status : bmps;
}

/** `[LLL version] <status> [BMPs]`; a status F0-F9 without version is tried when the version is not. */
function statusCompletion(data: Buffer): Decoded<Completion> {
  const first = data[0];
  const hasVersion = first !== undefined && first >= 0xf0 && first <= 0xf9;
  const withVersion = hasVersion ? versionFirst(data) : undefined;
  if (withVersion?.ok) return withVersion;
  const statusOnly = statusAt(data, 0, undefined);
  return statusOnly.ok || !withVersion ? statusOnly : withVersion;
}

function versionFirst(data: Buffer): Decoded<Completion> {
  const length = readVarLength(data.subarray(0, 3));
  if (data.length < 3 || length === undefined) {
    return failure('bad-var-length', 'the software version has no valid LLL length', 0);
  }
  if (3 + length > data.length) return failure('truncated', 'the software version is cut', 3);
  return statusAt(data, 3 + length, decodeCp437(data.subarray(3, 3 + length)));
}

function statusAt(
  data: Buffer,
  at: number,
  softwareVersion: string | undefined,
): Decoded<Completion> {
  const terminalStatus = data[at];
  if (terminalStatus === undefined) {
    return failure('missing-field', '06 0F after 05 01 needs a terminal status byte', at);
  }
  const bmps = decodeBmps(data, at + 1);
  if (!bmps.ok) return bmps;
  const status =
    softwareVersion === undefined ? { terminalStatus } : { softwareVersion, terminalStatus };
  return decoded({ type: 'completion', status, bmps: bmps.value });
}

export function decodeAbort(data: Buffer): Decoded<Abort> {
  const resultCode = data[0];
  if (resultCode === undefined) return decoded({ type: 'abort', bmps: [] });
  const bmps = decodeBmps(data, 1);
  if (bmps.ok) return decoded({ type: 'abort', resultCode, bmps: bmps.value });
  if (resultCode === 0x6f && data.length >= 3) {
    const after = decodeBmps(data, 3);
    if (after.ok) {
      return decoded({
        type: 'abort',
        resultCode,
        currency: nibblesOf(data.subarray(1, 3)),
        bmps: after.value,
      });
    }
  }
  return bmps;
}

export function decodeAck(cls: 0x80 | 0x84, code: number, data: Buffer): Ack {
  const ack: Ack = { type: 'ack', cls, code, data };
  if (data.length > 0) {
    const bmps = decodeBmps(data);
    if (bmps.ok) ack.bmps = bmps.value;
  }
  return ack;
}

/** The data bytes of a PT message. */
export function encodePtData(message: PtMessage): Buffer {
  switch (message.type) {
    case 'intermediate-status':
      return Buffer.concat([
        Buffer.from(
          message.timeout === undefined
            ? [byte(message.status)]
            : [byte(message.status), byte(message.timeout)],
        ),
        encodeBmps(message.bmps),
      ]);
    case 'status-information':
    case 'print-text-block':
      return encodeBmps(message.bmps);
    case 'print-line':
      return Buffer.concat([
        Buffer.from([byte(message.attribute)]),
        encodeCp437(message.text),
        message.tlv ? encodeBmp({ tag: 0x06, format: 'tlv', value: message.tlv }) : Buffer.alloc(0),
      ]);
    case 'completion': {
      if (!message.status) return encodeBmps(message.bmps);
      const { softwareVersion, terminalStatus } = message.status;
      const version =
        softwareVersion === undefined
          ? Buffer.alloc(0)
          : Buffer.concat([
              varLengthPrefix(encodeCp437(softwareVersion).length, 3),
              encodeCp437(softwareVersion),
            ]);
      return Buffer.concat([
        version,
        Buffer.from([byte(terminalStatus)]),
        encodeBmps(message.bmps),
      ]);
    }
    case 'abort':
      if (message.resultCode === undefined) {
        if (message.bmps.length > 0)
          throw new RangeError('an abort with fields needs a result code');
        return Buffer.alloc(0);
      }
      return Buffer.concat([
        Buffer.from([byte(message.resultCode)]),
        message.currency === undefined ? Buffer.alloc(0) : bcdFromNibbles(message.currency),
        encodeBmps(message.bmps),
      ]);
  }
}

function byte(value: number): number {
  if (!Number.isInteger(value) || value < 0 || value > 0xff) {
    throw new RangeError(`${value} is not a byte`);
  }
  return value;
}
