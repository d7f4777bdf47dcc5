import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeApdu, fromHex, hexBytes } from './apdu.js';
import type { Bmp } from './bmp.js';
import { readBmps } from './bmp-values.js';
import type { ZvtMessage } from './message-types.js';
import {
  decodeMessageBytes,
  isPositiveAck,
  messageBytes,
  negativeAck,
  positiveAck,
} from './messages.js';
import { PROPERTY, bmpList, bytes, container } from './testing/arbitraries.js';
import { APDU_VECTORS } from './testing/vectors.js';
import { findAllValues } from './tlv.js';

const decode = (hex: string, command?: Parameters<typeof decodeMessageBytes>[1]) => {
  const result = decodeMessageBytes(fromHex(hex), command);
  if (!result.ok) throw new Error(`${hex}: ${result.error.message}`);
  return result.value;
};

describe('ZVT messages', () => {
  it.each(APDU_VECTORS.map((vector) => [vector.id, vector] as const))(
    '%s decodes to its type and re-encodes byte for byte',
    (_id, vector) => {
      const result = decodeMessageBytes(vector.bytes, vector.context);
      expect(result.ok ? result.value.type : result.error).toBe(vector.type);
      if (result.ok) expect(hexBytes(messageBytes(result.value))).toBe(hexBytes(vector.bytes));
    },
  );

  it('reads the untagged heads: registration, reversal, refund, status enquiry', () => {
    expect(decode('06 00 06 12 34 56 BA 09 78')).toEqual({
      type: 'registration',
      password: '123456',
      config: 0xba,
      currency: '0978',
      bmps: [],
    });
    expect(decode('06 00 06 00 00 00 B6 03 01')).toMatchObject({
      config: 0xb6,
      bmps: [{ tag: 0x03, value: 1 }],
    });
    expect(decode('06 00 04 00 00 00 86').type).toBe('registration');
    const reversal = decode('06 30 06 12 34 56 87 00 42');
    expect(reversal).toMatchObject({ type: 'reversal', password: '123456' });
    if (reversal.type === 'reversal') expect(readBmps(reversal.bmps).receiptNumber).toBe(42);
    // Liberal: a reversal without its password.
    expect(decode('06 30 03 87 00 42')).toMatchObject({
      type: 'reversal',
      bmps: [{ tag: 0x87, value: '0042' }],
    });
    expect(decode('06 30 03 87 00 42')).not.toHaveProperty('password');
    expect(decode('05 01 00')).toEqual({ type: 'status-enquiry', bmps: [] });
  });

  it('reads the heads of PT messages (04 FF, 06 D1, 06 0F, 06 1E)', () => {
    expect(decode('04 FF 01 17')).toEqual({ type: 'intermediate-status', status: 0x17, bmps: [] });
    const v18 = decode(APDU_VECTORS.find((v) => v.id === 'V18')?.bytes.toString('hex') ?? '');
    expect(v18).toMatchObject({ type: 'intermediate-status', status: 0x0a, timeout: 1 });
    if (v18.type === 'intermediate-status' && v18.bmps[0]?.format === 'tlv') {
      expect(findAllValues(v18.bmps[0].value.items, 0x07)[0]?.toString('latin1')).toBe(
        'Karte vorhalten\neinstecken/durchziehen',
      );
    }
    expect(decode('06 D1 01 81')).toEqual({ type: 'print-line', attribute: 0x81, text: '' });
    expect(decode('06 D1 09 00 41 42 06 04 1F 07 01 01')).toMatchObject({
      type: 'print-line',
      text: 'AB',
      tlv: { items: [{ tag: 0x1f07, value: fromHex('01') }] },
    });
    // A text containing an 06 byte that does not start a container stays text.
    expect(decode('06 D1 04 00 41 06 42')).toMatchObject({ type: 'print-line', text: 'A\x06B' });
    expect(decode(`06 0F 0B F0 F0 F7 ${Buffer.from('2.14.15').toString('hex')} 00`)).toMatchObject({
      status: { softwareVersion: '2.14.15', terminalStatus: 0 },
    });
    expect(decode('06 0F 01 F0', { command: 'status-enquiry' })).toMatchObject({
      status: { terminalStatus: 0xf0 },
      bmps: [],
    });
    expect(decode('06 0F 01 00', { command: 'status-enquiry' })).toMatchObject({
      status: { terminalStatus: 0 },
    });
    expect(decode('06 0F 01 00')).toMatchObject({ status: { terminalStatus: 0 } });
    expect(decode('06 1E 00')).toEqual({ type: 'abort', bmps: [] });
    expect(decode('06 1E 03 6F 09 78')).toEqual({
      type: 'abort',
      resultCode: 0x6f,
      currency: '0978',
      bmps: [],
    });
  });

  it('tells positive from negative acknowledgements', () => {
    expect(isPositiveAck(decode('80 00 00'))).toBe(true);
    expect(isPositiveAck(decode('84 00 00'))).toBe(true);
    expect(isPositiveAck(decode('84 83 00'))).toBe(false);
    expect(decode('84 9D 07 04 00 00 00 00 22 00')).toMatchObject({
      code: 0x9d,
      bmps: [{ tag: 0x04 }],
    });
    expect(decode('84 1E 01 7D')).toMatchObject({ code: 0x1e, data: fromHex('7D') });
    expect(decode('84 1E 01 7D')).not.toHaveProperty('bmps');
    expect(hexBytes(messageBytes(positiveAck()))).toBe('80 00 00');
    expect(hexBytes(messageBytes(negativeAck(0x83)))).toBe('84 83 00');
    expect(
      hexBytes(
        messageBytes(negativeAck(0x9d, [{ tag: 0x04, format: 'bcd', value: '000000002200' }])),
      ),
    ).toBe('84 9D 07 04 00 00 00 00 22 00');
  });

  it('reports hostile bytes with a code and the offset from the APDU start', () => {
    const failure = (hex: string) => {
      const result = decodeMessageBytes(fromHex(hex));
      return result.ok ? undefined : result.error;
    };
    expect(failure('04 0F FF 01 00 6C')).toMatchObject({ code: 'unknown-bmp', offset: 5 });
    expect(failure('04 0F 04 27 00 07 01')).toMatchObject({ code: 'unknown-bmp', offset: 5 });
    expect(failure('06 00 02 12 34')).toMatchObject({ code: 'missing-field' });
    expect(failure('04 FF 00')).toMatchObject({ code: 'missing-field', offset: 3 });
    expect(failure('06 01 03 04 00 00')).toMatchObject({ code: 'truncated', offset: 3 });
    expect(failure('06 01')).toMatchObject({ code: 'truncated', offset: 0 });
  });

  const roundTrips = (message: ZvtMessage) => {
    const bytesOf = messageBytes(message);
    const decoded = decodeMessageBytes(bytesOf);
    expect(decoded).toEqual({ ok: true, value: message });
  };

  it('decode∘encode is the identity for BMP-only messages and acks (property)', () => {
    const bmpOnly = fc.oneof(
      ...(['authorisation', 'display-text', 'status-information', 'print-text-block'] as const).map(
        (type) => bmpList().map((bmps): ZvtMessage => ({ type, bmps })),
      ),
    );
    fc.assert(fc.property(bmpOnly, roundTrips), PROPERTY);
  });

  it('decode∘encode is the identity for messages with untagged heads (property)', () => {
    const byte = fc.integer({ min: 0, max: 255 });
    const password = bytes(3, 3).map((b) => b.toString('hex').toUpperCase());
    const text = fc
      .string({ maxLength: 40 })
      .map((s) => s.replace(/[^\x20-\x7e]/g, '').replaceAll('\x06', ''));
    const messages: fc.Arbitrary<ZvtMessage> = fc.oneof(
      fc.record({
        type: fc.constant('registration' as const),
        password,
        config: byte,
        currency: fc.constantFrom('0978', '0840', '0756', '0826'),
        bmps: fc.constant<Bmp[]>([]),
      }),
      fc.record({
        type: fc.constant('end-of-day' as const),
        password,
        bmps: fc.constant<Bmp[]>([]),
      }),
      fc.record({
        type: fc.constant('reversal' as const),
        password,
        bmps: fc
          .integer({ min: 0, max: 9999 })
          .map((n) => [{ tag: 0x87, format: 'bcd' as const, value: String(n).padStart(4, '0') }]),
      }),
      fc.record({
        type: fc.constant('intermediate-status' as const),
        status: byte,
        bmps: fc.constant<Bmp[]>([]),
      }),
      fc.record({
        type: fc.constant('intermediate-status' as const),
        status: byte,
        timeout: byte,
        bmps: container.map((value) => [{ tag: 0x06, format: 'tlv' as const, value }]),
      }),
      fc.record({ type: fc.constant('print-line' as const), attribute: byte, text }),
      fc.record({
        type: fc.constant('print-line' as const),
        attribute: byte,
        text,
        tlv: container,
      }),
      fc.record({ type: fc.constant('abort' as const), resultCode: byte, bmps: bmpList(2) }),
      fc.record({
        type: fc.constant('ack' as const),
        cls: fc.constantFrom(0x80 as const, 0x84 as const),
        code: byte,
        data: fc.constant(Buffer.alloc(0)),
      }),
    );
    fc.assert(fc.property(messages, roundTrips), PROPERTY);
  });

  it('never throws on hostile data under every known control field (property)', () => {
    const controls = [
      [0x06, 0x00],
      [0x06, 0x01],
      [0x06, 0x02],
      [0x06, 0x20],
      [0x06, 0x30],
      [0x06, 0x31],
      [0x06, 0x50],
      [0x06, 0xb0],
      [0x06, 0xe0],
      [0x05, 0x01],
      [0x04, 0xff],
      [0x04, 0x0f],
      [0x06, 0xd1],
      [0x06, 0xd3],
      [0x06, 0x0f],
      [0x06, 0x1e],
      [0x80, 0x00],
      [0x84, 0x9d],
    ] as const;
    const context = fc.constantFrom(undefined, 'status-enquiry' as const, 'authorisation' as const);
    fc.assert(
      fc.property(
        fc.constantFrom(...controls),
        bytes(0, 80),
        context,
        ([cls, ins], data, command) => {
          const input = encodeApdu({ cls, ins, data });
          const result = decodeMessageBytes(input, { command });
          if (result.ok) expect(messageBytes(result.value)).toEqual(input);
          else expect(result.error.offset).toBeLessThanOrEqual(input.length);
        },
      ),
      { ...PROPERTY, numRuns: 2000 },
    );
  });
});
