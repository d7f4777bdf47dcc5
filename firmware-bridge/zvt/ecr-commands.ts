/**
 * Data layouts of the ECR → PT commands (zvt-notes §5.1-5.9). Liberal where the sources
 * differ: a password-first command is also read without its password when only that
 * reading parses (or only that one carries the field the command needs, e.g. 87 in a
 * reversal), and a registration's untagged currency is optional.
 */
import { decodeBmps, encodeBmps, findBmp, type Bmp } from './bmp.js';
import { nibblesOf, bcdFromNibbles } from './encodings.js';
import { decoded, failure, type Decoded } from './errors.js';
import type { EcrCommand, PasswordCommand, Registration } from './message-types.js';

type PasswordType = 'reversal' | 'refund' | 'end-of-day' | 'repeat-receipt' | 'status-enquiry';

/** The BMP each password command is about, used to tell `<pwd> BMPs` from `BMPs`. */
const KEY_FIELD: Record<PasswordType, number | undefined> = {
  reversal: 0x87,
  refund: 0x04,
  'end-of-day': undefined,
  'repeat-receipt': undefined,
  'status-enquiry': undefined,
};

export function decodePasswordCommand<T extends PasswordType>(
  type: T,
  data: Buffer,
): Decoded<PasswordCommand<T>> {
  if (data.length === 0) return decoded({ type, bmps: [] });
  const withPassword = data.length >= 3 ? decodeBmps(data, 3) : undefined;
  const without = decodeBmps(data, 0);
  const key = KEY_FIELD[type];
  const has = (result: Decoded<Bmp[]> | undefined): boolean =>
    result?.ok === true && (key === undefined || findBmp(result.value, key) !== undefined);
  const password = nibblesOf(data.subarray(0, 3));
  if (withPassword?.ok && has(withPassword)) {
    return decoded({ type, password, bmps: withPassword.value });
  }
  if (without.ok && has(without)) return decoded({ type, bmps: without.value });
  if (withPassword?.ok) return decoded({ type, password, bmps: withPassword.value });
  if (without.ok) return decoded({ type, bmps: without.value });
  if (withPassword) return withPassword;
  return failure('truncated', `${type}: a password has 3 bytes, got ${data.length}`, 0);
}

/**
 * 06 00. After `<pwd> <config>`, a leading 03 or 06 is read as a BMP and anything else as
 * the untagged currency; when that reading fails the other is tried. So a currency 3xx or
 * 6xx (HUF 348) is found only when the BMP reading fails.
 */
export function decodeRegistration(data: Buffer): Decoded<Registration> {
  if (data.length < 4) {
    return failure(
      'missing-field',
      'registration needs a 3-byte password and a config byte',
      data.length,
    );
  }
  const base = {
    type: 'registration' as const,
    password: nibblesOf(data.subarray(0, 3)),
    config: data[3] as number,
  };
  if (data.length === 4) return decoded({ ...base, bmps: [] });
  const asBmps = () => decodeBmps(data, 4);
  const asCurrency = (): Decoded<Registration> => {
    if (data.length < 6) return failure('truncated', 'a currency code has 2 bytes', data.length);
    const bmps = decodeBmps(data, 6);
    if (!bmps.ok) return bmps;
    return decoded({ ...base, currency: nibblesOf(data.subarray(4, 6)), bmps: bmps.value });
  };
  const first = data[4];
  if (first === 0x03 || first === 0x06) {
    const bmps = asBmps();
    if (bmps.ok) return decoded({ ...base, bmps: bmps.value });
    const currency = asCurrency();
    return currency.ok ? currency : bmps;
  }
  const currency = asCurrency();
  if (currency.ok) return currency;
  const bmps = asBmps();
  return bmps.ok ? decoded({ ...base, bmps: bmps.value }) : currency;
}

/** The data bytes of an ECR command. */
export function encodeCommandData(command: EcrCommand): Buffer {
  switch (command.type) {
    case 'registration':
      return Buffer.concat([
        password(command.password),
        Buffer.from([byte(command.config)]),
        command.currency === undefined ? Buffer.alloc(0) : currency(command.currency),
        encodeBmps(command.bmps),
      ]);
    case 'authorisation':
    case 'display-text':
      return encodeBmps(command.bmps);
    case 'reversal':
    case 'refund':
    case 'end-of-day':
    case 'repeat-receipt':
    case 'status-enquiry':
      return Buffer.concat([
        command.password === undefined ? Buffer.alloc(0) : password(command.password),
        encodeBmps(command.bmps),
      ]);
    case 'log-off':
    case 'abort-command':
      return Buffer.alloc(0);
  }
}

function password(nibbles: string): Buffer {
  const bytes = bcdFromNibbles(nibbles);
  if (bytes.length !== 3) throw new RangeError(`a password is 6 BCD digits: ${nibbles}`);
  return bytes;
}

function currency(nibbles: string): Buffer {
  const bytes = bcdFromNibbles(nibbles);
  if (bytes.length !== 2) throw new RangeError(`a currency code is 4 BCD nibbles: ${nibbles}`);
  return bytes;
}

function byte(value: number): number {
  if (!Number.isInteger(value) || value < 0 || value > 0xff) {
    throw new RangeError(`${value} is not a byte`);
  }
  return value;
}
