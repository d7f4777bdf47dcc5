/**
 * The ECR commands as values, from what a caller knows (an amount, a receipt number), so
 * neither the session's users nor the tests assemble fields. Conservative: only fields the
 * notes mark as stated by several sources [S]; the currency is sent in 06 01 only when
 * asked for (some PTs refuse BMP 49 there, KZ).
 */
import type { Bmp } from './bmp.js';
import { bmpsFrom } from './bmp-values.js';
import { decimalNibbles } from './encodings.js';
import type { EcrCommand, Registration } from './message-types.js';
import type { TlvContainer } from './tlv.js';

/** PZ's default password; the emulated PT's too. */
export const DEFAULT_PASSWORD = '000000';
/** EUR, ISO 4217 numeric. */
export const EUR = 978;

/** Bits of the registration config byte (zvt-notes §6.7). */
export const CONFIG = {
  /** The ECR prints payment receipts (the PT does not). */
  ecrPrintsPaymentReceipts: 0x02,
  /** The ECR prints administration receipts (end-of-day). */
  ecrPrintsAdminReceipts: 0x04,
  /** The PT sends intermediate status 04 FF. */
  intermediateStatus: 0x08,
  /** Amount entry on the PT not possible. */
  ecrControlsPayment: 0x10,
  /** Administration started on the PT not possible. */
  ecrControlsAdministration: 0x20,
  /** Receipts arrive as 06 D1 / 06 D3 (else the ECR builds them from 04 0F). */
  receiptsAsPrintLines: 0x80,
} as const;

/** ET's "all" (BE): the ECR prints every receipt, controls the PT, gets 04 FF. */
export const DEFAULT_CONFIG = 0xbe;

export interface RegistrationOptions {
  password?: string;
  config?: number;
  /** ISO 4217 numeric (default EUR); null to send none. */
  currency?: number | null;
  serviceByte?: number;
  /** A TLV container (an empty one activates TLV output on the PT). */
  tlv?: TlvContainer;
}

export function registration(options: RegistrationOptions = {}): Registration {
  const currency = options.currency === undefined ? EUR : options.currency;
  const bmps: Bmp[] = bmpsFrom({ serviceByte: options.serviceByte, tlv: options.tlv });
  return {
    type: 'registration',
    password: options.password ?? DEFAULT_PASSWORD,
    config: options.config ?? DEFAULT_CONFIG,
    ...(currency === null ? {} : { currency: decimalNibbles(currency, 2) }),
    bmps,
  };
}

export interface AuthorisationOptions {
  /** ISO 4217 numeric; not sent unless given. */
  currency?: number;
  /** BMP 19 in the request; not sent unless given (the PT decides). */
  paymentType?: number;
  /** BMP 02: issue of goods, the PT repeats 04 0F while the ECR answers 84 9C 00. */
  maxStatusInfos?: number;
}

/** 06 01 for `amount` minor units. */
export function authorisation(amount: number, options: AuthorisationOptions = {}): EcrCommand {
  return { type: 'authorisation', bmps: bmpsFrom({ amount, ...options }) };
}

/** 06 31 for `amount` minor units. */
export function refund(
  amount: number,
  options: { password?: string; currency?: number } = {},
): EcrCommand {
  return {
    type: 'refund',
    password: options.password ?? DEFAULT_PASSWORD,
    bmps: bmpsFrom({ amount, currency: options.currency }),
  };
}

/** 06 30 of the payment with this receipt number (BMP 87 of its 04 0F). */
export function reversal(receiptNumber: number, options: { password?: string } = {}): EcrCommand {
  return {
    type: 'reversal',
    password: options.password ?? DEFAULT_PASSWORD,
    bmps: bmpsFrom({ receiptNumber }),
  };
}

export function endOfDay(options: { password?: string } = {}): EcrCommand {
  return { type: 'end-of-day', password: options.password ?? DEFAULT_PASSWORD, bmps: [] };
}

/** Repeat-receipt service byte: 01 send the status information again, 02 no receipt (EP). */
export const REPEAT_RECEIPT = { statusInformation: 0x01, noReceipt: 0x02 } as const;

export function repeatReceipt(
  options: { password?: string; serviceByte?: number } = {},
): EcrCommand {
  return {
    type: 'repeat-receipt',
    password: options.password ?? DEFAULT_PASSWORD,
    bmps: bmpsFrom({ serviceByte: options.serviceByte }),
  };
}

export function statusEnquiry(
  options: { password?: string; serviceByte?: number } = {},
): EcrCommand {
  return {
    type: 'status-enquiry',
    password: options.password ?? DEFAULT_PASSWORD,
    bmps: bmpsFrom({ serviceByte: options.serviceByte }),
  };
}

export const logOff = (): EcrCommand => ({ type: 'log-off' });
export const abortCommand = (): EcrCommand => ({ type: 'abort-command' });

/** 06 E0 with up to 8 lines (F1-F8) and an optional duration in s (F0, 0 = unlimited). */
export function displayText(lines: readonly string[], durationS?: number): EcrCommand {
  if (lines.length > 8) throw new RangeError('a display text has at most 8 lines');
  const bmps: Bmp[] = [];
  if (durationS !== undefined) bmps.push({ tag: 0xf0, format: 'byte', value: durationS });
  lines.forEach((text, index) => bmps.push({ tag: 0xf1 + index, format: 'text', value: text }));
  return { type: 'display-text', bmps };
}
