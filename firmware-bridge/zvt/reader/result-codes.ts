/**
 * ZVT result codes (BMP 27, 06 1E, 84 xx; zvt-notes §6.1) as the spec's `result_code`
 * values, and the terminal's texts of its intermediate status (04 FF, §6.2) and terminal
 * status (05 01, §6.3) as screen messages. docs/zvt.md carries the same tables.
 *
 * The codes the emulated terminal sends for the trigger amounts map back to the native
 * reader's codes (emulator/zvt/terminal-outcomes.ts): 05 DECLINED_BY_ISSUER, 66
 * CARD_REMOVED, 6C ABORTED, 83 PROCESSOR_REJECTED, 9B NETWORK_ERROR, C5
 * CARD_NOT_ACCEPTED, FF SYSTEM_ERROR. Host codes 01-63 are the acquirer's two-digit
 * response code written as BCD (ET); 51, 54, 55 keep their ISO 8583 meaning.
 */

export interface MappedResult {
  result_code: string;
  /** Printable ASCII: the code in hex and the notes' meaning. */
  result_description: string;
}

/** [result_code, meaning] per ZVT code; codes not listed are SYSTEM_ERROR. */
const RESULTS: ReadonlyMap<number, readonly [string, string]> = new Map([
  [0x00, ['SUCCESS', 'approved']],
  [0x64, ['CARD_NOT_READABLE', 'card not readable']],
  [0x65, ['CARD_NOT_READABLE', 'card data not present']],
  [0x66, ['CARD_REMOVED', 'processing error (card reader)']],
  [0x67, ['CARD_NOT_ACCEPTED', 'not permitted for ec/Maestro cards']],
  [0x68, ['CARD_NOT_ACCEPTED', 'not permitted for credit and tank cards']],
  [0x6a, ['TERMINAL_STORAGE_FULL', 'turnover file full']],
  [0x6b, ['TERMINAL_NOT_REGISTERED', 'function deactivated (PT not registered)']],
  [0x6c, ['ABORTED', 'aborted']],
  [0x6e, ['CARD_BLOCKED', 'card on blocked list']],
  [0x6f, ['WRONG_CURRENCY', 'wrong currency']],
  [0x71, ['INSUFFICIENT_FUNDS', 'credit not sufficient (chip)']],
  [0x72, ['CARD_NOT_READABLE', 'chip error']],
  [0x73, ['CARD_NOT_READABLE', 'card data incorrect']],
  [0x77, ['END_OF_DAY_NOT_POSSIBLE', 'end-of-day not possible']],
  [0x78, ['CARD_EXPIRED', 'card expired']],
  [0x79, ['CARD_NOT_YET_VALID', 'card not yet valid']],
  [0x7a, ['CARD_NOT_ACCEPTED', 'card unknown']],
  [0x7d, ['NETWORK_ERROR', 'communication error']],
  [0x83, ['PROCESSOR_REJECTED', 'function not possible']],
  [0x9a, ['PROTOCOL_ERROR', 'ZVT protocol error']],
  [0x9b, ['NETWORK_ERROR', 'dial-up / communication fault']],
  [0x9c, ['TERMINAL_BUSY', 'please wait']],
  [0xa0, ['NETWORK_ERROR', 'receiver not ready']],
  [0xa1, ['NETWORK_ERROR', 'remote station not responding']],
  [0xa3, ['NETWORK_ERROR', 'no connection']],
  [0xb1, ['TERMINAL_STORAGE_FULL', 'memory full']],
  [0xb2, ['TERMINAL_STORAGE_FULL', 'merchant journal full']],
  [0xb4, ['ALREADY_REVERSED', 'already reversed']],
  [0xb5, ['REVERSAL_NOT_POSSIBLE', 'reversal not possible']],
  [0xc3, ['AMOUNT_TOO_HIGH', 'maximum amount exceeded']],
  [0xc5, ['CARD_NOT_ACCEPTED', 'payment method not supported']],
  [0xc6, ['WRONG_CURRENCY', 'currency not applicable']],
  [0xc8, ['AMOUNT_TOO_LOW', 'amount too small']],
  [0xcb, ['WRONG_CURRENCY', 'EUR only']],
  [0xcd, ['CASHBACK_NOT_POSSIBLE', 'cashback not possible']],
  [0xd2, ['CARD_NOT_ACCEPTED', 'not permitted for service cards']],
  [0xf0, ['END_OF_DAY_REQUIRED', 'open end-of-day batch present']],
  [0xff, ['SYSTEM_ERROR', 'system error']],
]);

/** ISO 8583 response codes with a code of their own; other host codes are declines. */
const HOST_CODES: ReadonlyMap<number, string> = new Map([
  [51, 'INSUFFICIENT_FUNDS'],
  [54, 'CARD_EXPIRED'],
  [55, 'INCORRECT_PIN'],
]);

const hex = (code: number) => code.toString(16).toUpperCase().padStart(2, '0');

/** Whether `code` is a host (acquirer) code: 01-63 with both nibbles decimal. */
export function isHostCode(code: number): boolean {
  return code >= 0x01 && code <= 0x63 && (code & 0x0f) <= 9;
}

/** The spec's result code and a description for a ZVT result code (any byte). */
export function resultOfCode(code: number): MappedResult {
  const byte = code & 0xff;
  if (isHostCode(byte)) {
    const response = Number(hex(byte));
    return {
      result_code: HOST_CODES.get(response) ?? 'DECLINED_BY_ISSUER',
      result_description: `ZVT ${hex(byte)}: declined by the host (response code ${hex(byte)})`,
    };
  }
  const known = RESULTS.get(byte);
  return {
    result_code: known?.[0] ?? 'SYSTEM_ERROR',
    result_description: `ZVT ${hex(byte)}: ${known?.[1] ?? 'unknown result code'}`,
  };
}

/** The refusal of a command (84 xx): nothing ran on the terminal. */
export function refusalOfCode(code: number): MappedResult {
  const byte = code & 0xff;
  if (byte === 0x83) {
    return {
      result_code: 'READER_BUSY',
      result_description: 'ZVT 84 83: the terminal refused the command (busy or not possible)',
    };
  }
  const mapped = resultOfCode(byte);
  return { ...mapped, result_description: `${mapped.result_description}, command refused` };
}

/** Intermediate status 04 FF (§6.2), English; codes 41-67 are 01-27 plus "remove card". */
const INTERMEDIATE: Readonly<Record<number, string>> = {
  0x00: 'Waiting for amount confirmation',
  0x01: 'Please watch PIN pad',
  0x02: 'Please watch PIN pad',
  0x03: 'Not accepted',
  0x04: 'Waiting for host',
  0x05: 'Sending auto-reversal',
  0x06: 'Sending post-bookings',
  0x07: 'Card not admitted',
  0x08: 'Card unknown',
  0x09: 'Expired card',
  0x0a: 'Insert card',
  0x0b: 'Please remove card',
  0x0c: 'Card not readable',
  0x0d: 'Processing error',
  0x0e: 'Please wait',
  0x0f: 'Automatic end-of-day starting',
  0x10: 'Invalid card',
  0x11: 'Balance display',
  0x12: 'System malfunction',
  0x13: 'Payment not possible',
  0x14: 'Credit not sufficient',
  0x15: 'Incorrect PIN',
  0x16: 'Limit not sufficient',
  0x17: 'Please wait',
  0x18: 'PIN try limit exceeded',
  0x19: 'Card data incorrect',
  0x1a: 'Service mode',
  0x1b: 'Approved, please fill up',
  0x1c: 'Approved, please take goods',
  0x1d: 'Declined',
  0x26: 'Waiting for mobile number',
  0x27: 'Waiting for repeat of mobile number',
  0x28: 'Currency selection',
  0x29: 'Language selection',
  0x2a: 'Insert card for loading',
  0x2b: 'Emergency transaction',
  0x2c: 'Application selection',
  0x5e: 'Contactless access finished',
  0x68: 'Card inserted',
  0x69: 'Select DCC',
  0x6a: 'PIN digit entered',
  0x6b: 'PIN correction',
  0x6c: 'PIN entered',
  0xc7: 'Enter mileage',
  0xc8: 'Waiting for cashier',
  0xc9: 'Automatic diagnosis',
  0xca: 'Automatic initialisation',
  0xcb: 'Merchant journal full',
  0xcc: 'PIN required',
  0xd2: 'Dialling',
  0xd3: 'Connection made',
  0xe0: 'Application selection',
  0xe1: 'Language selection',
  0xe2: 'Cleaning card',
  0xf1: 'Offline',
  0xf2: 'Online',
  0xf3: 'Offline transaction',
};

/** The screen text of an intermediate status code (`extra`: the profile's vendor codes). */
export function intermediateStatusText(
  status: number,
  extra: Readonly<Record<number, string>> = {},
): string {
  const own = extra[status] ?? INTERMEDIATE[status];
  if (own) return own;
  if (status >= 0x41 && status <= 0x67) {
    const base = INTERMEDIATE[status - 0x40];
    if (base) return `${base}, remove card`;
  }
  return `Terminal status ${hex(status)}`;
}

/** Terminal status (06 0F after 05 01, §6.3). */
const TERMINAL_STATUS: Readonly<Record<number, string>> = {
  0x00: 'Ready',
  0x51: 'Initialisation required',
  0x62: 'Date/time incorrect',
  0x9c: 'Please wait',
  0x9d: 'Partial issue of goods',
  0xb1: 'Memory full',
  0xb2: 'Merchant journal full',
  0xbf: 'Supply voltage too low',
  0xc0: 'Card lock defective',
  0xc1: 'Merchant card locked',
  0xc2: 'Diagnosis required',
  0xc4: 'Card profiles invalid',
  0xcc: 'Printer not ready',
  0xdc: 'Card inserted',
  0xdf: 'Out of order',
  0xe0: 'Remote maintenance active',
  0xe1: 'Card not completely removed',
  0xe2: 'Card reader defective',
  0xe3: 'Shutter closed',
  0xe4: 'Terminal activation required',
  0xf0: 'End-of-day required',
  0xf6: 'OPT data not available',
};

export function terminalStatusText(status: number): string {
  return TERMINAL_STATUS[status] ?? `Terminal status ${hex(status)}`;
}

/** Every table above, for docs and tests. */
export const RESULT_CODE_TABLE = RESULTS;
