/**
 * Vendor deviations of ZVT payment terminals as named profiles (agent config
 * `reader.profile`). Each says what it changes against `generic`; only deviations the
 * public sources report (zvt-notes §9) have a profile. Verifone and PAX terminals other
 * than Global Payments' have no reported deviation: they run with `generic`.
 */
import { z } from 'zod';
import { ZvtCharset } from '../charsets.js';

export { ZvtCharset };

export const ZvtProfileName = z.enum([
  'generic',
  'ingenico',
  'ccv',
  'global-payments',
  'cardcomplete',
  'hobex',
]);
export type ZvtProfileName = z.infer<typeof ZvtProfileName>;

export interface ZvtProfile {
  name: ZvtProfileName;
  description: string;
  /**
   * Encoding of print lines, text blocks and display texts nobody announced: a TLV 14 in
   * the 06 D3, the 06 D1's or the 04 FF's TLV wins (charsets.ts). The driver's `charset`
   * option overrides it (`withCharset`).
   */
  charset: ZvtCharset;
  /**
   * How receipts arrive: `print-lines` registers as printer and takes 06 D1 lines (and
   * 06 D3 blocks if the PT sends them anyway); `text-blocks` also permits 06 D3 at
   * registration (TLV 26), for PTs that cannot send 06 D1.
   */
  receipts: 'print-lines' | 'text-blocks';
  /** The PT honours 06 B0 (abort from the ECR): the agent's cancel. */
  abort: boolean;
  /** Repeat Receipt 06 20 with service 01 sends the last 04 0F again (crash recovery). */
  repeatReceiptStatus: boolean;
  /** Reversal 06 30 undoes only the PT's last transaction, whatever receipt is named. */
  reversalOfLastOnly: boolean;
  /** After an error 04 0F the PT may send no 06 0F / 06 1E: the 04 0F ends the command. */
  endsOnErrorStatusInformation: boolean;
  /** Vendor texts of intermediate status codes the common table lacks (04 FF). */
  extraIntermediateStatus: Readonly<Record<number, string>>;
}

const GENERIC: ZvtProfile = {
  name: 'generic',
  description: 'ZVT as the notes describe it: CP437, 06 D1 print lines, 06 B0 abort',
  charset: 'cp437',
  receipts: 'print-lines',
  abort: true,
  repeatReceiptStatus: true,
  reversalOfLastOnly: false,
  endsOnErrorStatusInformation: false,
  extraIntermediateStatus: {},
};

export const ZVT_PROFILES: Readonly<Record<ZvtProfileName, ZvtProfile>> = {
  generic: GENERIC,
  ingenico: {
    ...GENERIC,
    name: 'ingenico',
    description: 'Ingenico: intermediate status A0-A5; the serial ACK byte is sometimes missing',
    extraIntermediateStatus: {
      0xa0: 'Payment processed',
      0xa1: 'Payment processed, remove card',
      0xa2: 'Cancellation successful',
      0xa3: 'Cancellation successful, remove card',
      0xa4: 'Cancellation not possible',
      0xa5: 'Cancellation not possible, remove card',
    },
  },
  ccv: {
    ...GENERIC,
    name: 'ccv',
    description: 'CCV (A920): no 06 0F after a 04 0F with an error result',
    endsOnErrorStatusInformation: true,
  },
  'global-payments': {
    ...GENERIC,
    name: 'global-payments',
    description:
      'Global Payments (PAX A80): no 06 B0 abort, Repeat Receipt without the 04 0F, reversal of the last transaction only',
    abort: false,
    repeatReceiptStatus: false,
    reversalOfLastOnly: true,
  },
  cardcomplete: {
    ...GENERIC,
    name: 'cardcomplete',
    description: 'CardComplete (AT): text in ISO 8859 (-1 unless a TLV 14 says otherwise)',
    charset: 'iso-8859-1',
  },
  hobex: {
    ...GENERIC,
    name: 'hobex',
    description: 'Hobex (AT): no 06 D1 print lines; receipts as 06 D3 text blocks',
    receipts: 'text-blocks',
  },
};

export function zvtProfile(name: ZvtProfileName = 'generic'): ZvtProfile {
  return ZVT_PROFILES[name];
}

/**
 * The profile with another character set for unannounced text: a terminal of a known
 * vendor may still be set up differently (zod-checked here, as it comes from configuration).
 */
export function withCharset(profile: ZvtProfile, charset: unknown): ZvtProfile {
  if (charset === undefined) return profile;
  return { ...profile, charset: ZvtCharset.parse(charset) };
}
