/**
 * ZVT codes in words, for people reading the monitor and the probe (zvt-notes §5.1, §6.1,
 * §6.2, §6.3). Only for display: nothing branches on these texts.
 */
import { hex } from '../zvt/apdu.js';

/** Commands and messages by control field, including those the codec keeps as `other`. */
const CONTROL_NAMES: ReadonlyMap<string, string> = new Map([
  ['06 00', 'registration'],
  ['06 01', 'authorisation'],
  ['06 02', 'log-off'],
  ['06 03', 'account balance request'],
  ['06 09', 'prepaid top-up'],
  ['06 0C', 'book tip'],
  ['06 0F', 'completion'],
  ['06 10', 'send turnover totals'],
  ['06 12', 'print turnover receipts'],
  ['06 18', 'reset terminal'],
  ['06 1A', 'print system configuration'],
  ['06 1B', 'set/reset terminal ID'],
  ['06 1E', 'abort'],
  ['06 20', 'repeat receipt'],
  ['06 22', 'pre-authorisation'],
  ['06 23', 'partial reversal of pre-authorisation'],
  ['06 24', 'book total'],
  ['06 25', 'pre-authorisation reversal'],
  ['06 30', 'reversal'],
  ['06 31', 'refund'],
  ['06 50', 'end-of-day'],
  ['06 70', 'diagnosis'],
  ['06 79', 'selftest'],
  ['06 91', 'set date and time in PT'],
  ['06 93', 'initialisation'],
  ['06 95', 'change password'],
  ['06 B0', 'abort (from ECR)'],
  ['06 C0', 'read card'],
  ['06 C5', 'close card session'],
  ['06 D0', 'menu selection'],
  ['06 D1', 'print line'],
  ['06 D3', 'print text block'],
  ['06 E0', 'display text'],
  ['06 E1', 'display text with function-key input'],
  ['06 E2', 'display text with numerical input'],
  ['06 E3', 'PIN verification for customer card'],
  ['06 E4', 'blocked-list query'],
  ['06 E5', 'MAC calculation'],
  ['06 E6', 'card poll with authorisation'],
  ['04 01', 'set date and time in ECR'],
  ['04 0C', 'request file'],
  ['04 0F', 'status information'],
  ['04 FF', 'intermediate status'],
  ['05 01', 'status enquiry'],
  ['08 10', 'software update'],
  ['08 11', 'read file'],
  ['08 12', 'delete file'],
  ['08 13', 'change configuration'],
  ['08 14', 'write file'],
  ['08 30', 'select language'],
  ['08 40', 'change baudrate'],
  ['08 50', 'activate card reader'],
]);

/** The command's name; class 0F is for vendors' own commands (Feig's 0F A1 …). */
export function controlText(cls: number, ins: number): string | undefined {
  return CONTROL_NAMES.get(`${hex(cls)} ${hex(ins)}`) ?? (cls === 0x0f ? 'proprietary' : undefined);
}

const RESULT_CODES: ReadonlyMap<number, string> = new Map([
  [0x00, 'no error'],
  [0x05, 'declined'],
  [0x64, 'card not readable'],
  [0x65, 'card data not present'],
  [0x66, 'processing error'],
  [0x67, 'function not permitted for ec and Maestro cards'],
  [0x68, 'function not permitted for credit and tank cards'],
  [0x6a, 'turnover file full'],
  [0x6b, 'function deactivated (PT not registered)'],
  [0x6c, 'aborted'],
  [0x6e, 'card on blocked list'],
  [0x6f, 'wrong currency'],
  [0x71, 'credit not sufficient'],
  [0x72, 'chip error'],
  [0x73, 'card data incorrect'],
  [0x77, 'end-of-day batch not possible'],
  [0x78, 'card expired'],
  [0x79, 'card not yet valid'],
  [0x7a, 'card unknown'],
  [0x7d, 'communication error'],
  [0x83, 'function not possible'],
  [0x85, 'key missing'],
  [0x89, 'PIN pad defective'],
  [0x9a, 'ZVT protocol error'],
  [0x9b, 'dial-up / communication fault'],
  [0x9c, 'please wait'],
  [0x9d, 'partial issue of goods'],
  [0xa0, 'receiver not ready'],
  [0xa1, 'remote station not responding'],
  [0xa3, 'no connection'],
  [0xb1, 'memory full'],
  [0xb2, 'merchant journal full'],
  [0xb4, 'already reversed'],
  [0xb5, 'reversal not possible'],
  [0xb7, 'pre-authorisation incorrect'],
  [0xb8, 'error pre-authorisation'],
  [0xbf, 'supply voltage too low'],
  [0xc2, 'diagnosis required'],
  [0xc3, 'maximum amount exceeded'],
  [0xc5, 'payment method not supported'],
  [0xc6, 'currency not applicable'],
  [0xc8, 'amount too small'],
  [0xcc, 'printer not ready'],
  [0xdc, 'card inserted'],
  [0xe2, 'card reader defective'],
  [0xe4, 'terminal activation required'],
  [0xf0, 'open end-of-day batch present'],
  [0xff, 'system error'],
]);

/** `6C (aborted)`; codes 01-63 are the host's own. */
export function resultCodeText(code: number): string {
  const text =
    RESULT_CODES.get(code) ?? (code >= 0x01 && code <= 0x63 ? 'host code' : 'unknown code');
  return `${hex(code)} (${text})`;
}

const INTERMEDIATE_STATUS: ReadonlyMap<number, string> = new Map([
  [0x00, 'waiting for amount confirmation'],
  [0x01, 'watch PIN pad'],
  [0x02, 'watch PIN pad'],
  [0x03, 'not accepted'],
  [0x04, 'waiting for host'],
  [0x05, 'sending auto-reversal'],
  [0x06, 'sending post-bookings'],
  [0x07, 'card not admitted'],
  [0x08, 'card unknown'],
  [0x09, 'expired card'],
  [0x0a, 'insert card'],
  [0x0b, 'remove card'],
  [0x0c, 'card not readable'],
  [0x0d, 'processing error'],
  [0x0e, 'please wait'],
  [0x0f, 'automatic end-of-day starting'],
  [0x10, 'invalid card'],
  [0x11, 'balance display'],
  [0x12, 'system malfunction'],
  [0x13, 'payment not possible'],
  [0x14, 'credit not sufficient'],
  [0x15, 'incorrect PIN'],
  [0x16, 'limit not sufficient'],
  [0x17, 'please wait'],
  [0x18, 'PIN try limit exceeded'],
  [0x19, 'card data incorrect'],
  [0x1a, 'service mode'],
  [0x1b, 'approved, please fill up'],
  [0x1c, 'approved, please take goods'],
  [0x1d, 'declined'],
  [0xd2, 'dialling'],
  [0xd3, 'connection made'],
  [0xf1, 'offline'],
  [0xf2, 'online'],
  [0xf3, 'offline transaction'],
  [0xff, 'see text'],
]);

export function intermediateStatusText(code: number): string {
  const own = INTERMEDIATE_STATUS.get(code);
  const base = code >= 0x41 && code <= 0x67 ? INTERMEDIATE_STATUS.get(code - 0x40) : undefined;
  const text = own ?? (base ? `${base}, remove card` : 'unknown status');
  return `${hex(code)} (${text})`;
}

const TERMINAL_STATUS: ReadonlyMap<number, string> = new Map([
  [0x00, 'PT ready'],
  [0x51, 'initialisation required'],
  [0x62, 'date/time incorrect'],
  [0x9c, 'please wait'],
  [0x9d, 'partial issue of goods'],
  [0xb1, 'memory full'],
  [0xb2, 'merchant journal full'],
  [0xbf, 'supply voltage too low'],
  [0xc0, 'card lock defective'],
  [0xc1, 'merchant card locked'],
  [0xc2, 'diagnosis required'],
  [0xc4, 'card profiles invalid'],
  [0xcc, 'printer not ready'],
  [0xdc, 'card inserted'],
  [0xdf, 'out of order'],
  [0xe0, 'remote maintenance active'],
  [0xe1, 'card not completely removed'],
  [0xe2, 'card reader defective'],
  [0xe3, 'shutter closed'],
  [0xe4, 'terminal activation required'],
  [0xf0, 'end-of-day required'],
  [0xf6, 'OPT data not available'],
]);

export function terminalStatusText(code: number): string {
  return `${hex(code)} (${TERMINAL_STATUS.get(code) ?? 'unknown status'})`;
}

const STATUS_BYTE_BITS: readonly [number, string][] = [
  [0x01, 'initialisation necessary'],
  [0x02, 'diagnosis necessary'],
  [0x04, 'OPT action necessary'],
  [0x08, 'filling-station mode'],
  [0x10, 'vending-machine mode'],
];

/** BMP 19 of the completion of a registration (zvt-notes §6.4): `01 (initialisation necessary)`. */
export function statusByteText(byte: number): string {
  const set = STATUS_BYTE_BITS.filter(([bit]) => (byte & bit) !== 0).map(([, text]) => text);
  return `${hex(byte)} (${set.length > 0 ? set.join(', ') : 'nothing to do'})`;
}
