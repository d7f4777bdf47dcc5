/**
 * The byte vectors of zvt-notes §10 (public captures and tests of ET, EV, PZ), for the
 * codec's fixed tests. Test-only. `ascii()` writes text fields the way the notes quote them.
 */
import { fromHex } from '../apdu.js';
import type { DecodeContext, ZvtMessageType } from '../message-types.js';

const ascii = (text: string) => Buffer.from(text, 'latin1').toString('hex');

export interface ApduVector {
  id: string;
  bytes: Buffer;
  meaning: string;
  /** The message type it decodes to. */
  type: ZvtMessageType;
  context?: DecodeContext;
}

const v = (
  id: string,
  hex: string,
  type: ZvtMessageType,
  meaning: string,
  context?: DecodeContext,
): ApduVector => ({ id, bytes: fromHex(hex), type, meaning, ...(context ? { context } : {}) });

/** V34's header and lengths with 33 synthetic lines: the capture's text is not in the notes. */
function printTextBlock(): string {
  const line = (text: string) => `07 ${text.length.toString(16).padStart(2, '0')} ${ascii(text)}`;
  const lines = [
    line(''),
    ...Array.from({ length: 26 }, (_, i) =>
      line(`Line ${String(i + 1).padStart(2, '0')}`.padEnd(40, '.')),
    ),
    ...Array.from({ length: 6 }, () => line('')),
  ];
  return `06 D3 FF 61 04 06 82 04 5D 1F 07 01 02 25 82 04 55 ${lines.join(' ')} 09 01 FF`;
}

const zeros = (n: number) => Array.from({ length: n }, () => '00').join(' ');

export const APDU_VECTORS: readonly ApduVector[] = [
  v('V1', '06 00 06 12 34 56 BA 09 78', 'registration', 'Registration, pwd 123456, config BA, EUR'),
  v('V2', '06 93 03 12 34 56', 'other', 'Initialisation'),
  v('V3', '06 01 0A 04 00 00 00 01 10 00 49 09 78', 'authorisation', 'Authorisation 110.00 EUR'),
  v('V4', '06 70 00', 'other', 'Diagnosis'),
  v('V5', `06 D1 19 00 ${ascii('Gesamt      0       0,00')}`, 'print-line', 'Print line'),
  v('V6', '80 00 00', 'ack', 'positive acknowledgement'),
  v('V7', '84 9C 00', 'ack', 'please wait / repeat status-info'),
  v('V8', '06 18 00', 'other', 'Reset terminal'),
  v(
    'V9',
    `06 E0 25 F1 F1 F6 ${ascii('FAHRERNUMMER    ')} F2 F1 F5 ${ascii('EINGEBEN UND OK')}`,
    'display-text',
    'Display text, two lines',
  ),
  v('V10', '05 01 03 12 34 56', 'status-enquiry', 'Status enquiry'),
  v('V11', '05 01 05 12 34 56 03 04', 'status-enquiry', 'Status enquiry, service byte 04'),
  v(
    'V12',
    `06 0F 0B F0 F0 F7 ${ascii('2.14.15')} 00`,
    'completion',
    'Completion to 05 01: version 2.14.15, status 00',
    { command: 'status-enquiry' },
  ),
  v('V13', '06 00 06 12 34 56 DE 09 78', 'registration', 'Registration, config DE (Feig)'),
  v('V14', '06 0F 0A 19 10 29 52 52 35 35 49 09 78', 'completion', 'Completion after 06 00'),
  v(
    'V15',
    '06 0F 11 19 00 29 52 00 12 33 49 09 78 06 05 27 03 14 01 FF',
    'completion',
    'Completion with TLV 27{14 FF}',
  ),
  v('V16', '06 01 07 04 00 00 00 00 10 00', 'authorisation', 'Authorisation 10.00'),
  v('V17', '06 01 09 04 00 00 00 00 33 00 02 0A', 'authorisation', 'Authorisation, max 10 infos'),
  v(
    'V18',
    `04 FF 2E 0A 01 06 2A 24 28 07 26 ${ascii('Karte vorhalten\neinstecken/durchziehen')}`,
    'intermediate-status',
    'Intermediate status 0A with display text',
  ),
  v(
    'V19',
    `04 FF 14 0A 01 06 10 24 0E 07 0C ${ascii('Test ')} 84 20 94 20 81 20 E1`,
    'intermediate-status',
    'Intermediate status with CP437 text',
  ),
  v(
    'V20a',
    `04 0F 25 27 05 29 29 00 02 74 3C F0 F0 F9 ${ascii('Abgelehnt')} 8A 06 06 0D 24 0B 07 09 ${ascii('Abgelehnt')}`,
    'status-information',
    'Declined 05',
  ),
  v('V20b', '06 1E 01 05', 'abort', 'Abort code 05'),
  v(
    'V21',
    `04 0F 1E 27 6C 29 28 00 48 69 3C F0 F1 F9 ${ascii('Abbruch durch Kunde')}`,
    'status-information',
    'Aborted by customer',
  ),
  v(
    'V22',
    `06 1E 2E 6C 06 2B 1F 16 05 FF 00 00 14 41 1F 17 20 ${ascii('Abbruch durch externes Kommando!')}`,
    'abort',
    'Abort 6C after an ECR abort',
  ),
  v(
    'V23',
    `04 0F 5A 27 00 04 00 00 00 00 25 00 49 09 78 0C 22 55 58 0D 04 05 22 F0 F8 55 98 83 EE EE EE 80 74 87 02 31 3B 37 35 30 30 37 31 00 00 0B 00 09 75 19 60 29 52 52 35 35 0E 24 05 8A 06 8C 01 8B F1 F1 ${ascii('MasterCard')} 00 2A ${ascii('804011926      ')}`,
    'status-information',
    'Pre-auth result 25.00 EUR',
  ),
  v(
    'V24',
    `04 0F 65 27 00 0C 23 13 55 0D 10 29 0E 99 99 22 F0 F8 EE EE EE EE EE EE 47 71 A0 01 29 00 00 00 06 87 00 08 0B 00 00 00 8A 06 8B F1 F1 ${ascii('MASTERCARD')} 00 06 2E 2F 08 1F 12 01 02 1F 10 01 00 60 1B 43 07 A0 00 00 00 04 10 10 44 10 ${ascii('Debit Mastercard')} 1F 2B 04 10 01 50 08`,
    'status-information',
    'TLV-rich result',
  ),
  v(
    'V25',
    `06 22 1E 19 40 49 09 78 04 00 00 00 00 25 00 06 10 E9 0E 1F 62 02 ${ascii('AC')} 1F 63 06 ${ascii('384HH2')}`,
    'other',
    'Pre-authorisation 25.00',
  ),
  v(
    'V26',
    `06 23 21 19 40 87 04 91 49 09 78 04 00 00 00 00 12 95 06 10 E9 0E 1F 62 02 ${ascii('AC')} 1F 63 06 ${ascii('MF2246')}`,
    'other',
    'Partial reversal of receipt 0491',
  ),
  v('V27', '06 25 08 19 40 87 02 31 49 09 78', 'other', 'Pre-authorisation reversal'),
  v('V28a', '06 23 03 87 FF FF', 'other', 'Open pre-auth enquiry'),
  v('V28b', '06 1E 04 B8 87 FF FF', 'abort', 'No open pre-auth'),
  v('V28c', '06 1E 04 B8 87 01 23', 'abort', 'Pre-auth 0123 open'),
  v('V29', '06 50 03 12 34 56', 'end-of-day', 'End-of-day'),
  v(
    'V30',
    `04 0F 4D 27 00 04 00 00 00 00 09 58 0B 00 09 82 0D 04 06 0C 08 17 06 60 F0 F5 F3 02 33 02 34 ${zeros(14)} 02 00 00 00 00 09 58 ${zeros(28)}`,
    'status-information',
    'End-of-day totals 9.58',
  ),
  v(
    'V31',
    `06 0F 89 F0 F4 F0 ${ascii('GER-APP-v2.0.9;cS02.01.01-10.10-2-2;CC26')} 00 06 5B 1F 44 04 52 52 35 35 E4 43 1F 40 0A ${ascii('cVEND plug')} 1F 41 28 ${ascii('GER-APP-v2.0.9;cS02.01.01-10.10-2-2;CC26')} 1F 42 04 17 FD 1E 3C 1F 43 01 00 34 0D 1F 0E 04 20 23 04 05 1F 0F 03 22 56 55`,
    'completion',
    'Completion to 05 01 with device info',
    { command: 'status-enquiry' },
  ),
  v('V32', '04 FF 01 17', 'intermediate-status', 'Please wait, no timeout byte'),
  v('V33', '06 20 03 00 00 00', 'repeat-receipt', 'Repeat receipt'),
  v('V34', printTextBlock(), 'print-text-block', 'Print text block, long lengths'),
  v('V35', '06 C0 0F 0F 19 10 FC 02 06 08 1F 15 01 D0 1F 60 01 07', 'other', 'Read card'),
  v(
    'V36',
    '06 50 17 12 34 56 06 12 3F 21 0C 60 06 55 01 AA 05 01 BB 10 02 AB BA 11 01 77',
    'end-of-day',
    'Synthetic TLV: 2-byte constructed tag',
  ),
  v('PZ-1', '04 0F 02 27 00', 'status-information', 'minimal success'),
  v('PZ-2', '06 1E 01 64', 'abort', 'abort, card not readable'),
  v('PZ-3', '06 1E 00', 'abort', 'abort without code'),
  v('PZ-4', '84 83 00', 'ack', 'not supported'),
  v('PZ-5', '84 66 00', 'ack', 'goods not issued'),
  v('PZ-6', '06 D1 01 81', 'print-line', 'empty last line'),
  v('PZ-7', '84 9D 07 04 00 00 00 00 22 00', 'ack', 'partial issue of goods 22.00'),
  v('PZ-8', '06 0F 00', 'completion', 'empty completion'),
  v('PZ-9', '06 B0 00', 'abort-command', 'abort from the ECR'),
  v('PZ-10', '06 02 00', 'log-off', 'log-off'),
  v('PZ-11', '06 30 06 12 34 56 87 00 42', 'reversal', 'reversal of receipt 0042'),
  v('PZ-12', '06 31 0A 00 00 00 04 00 00 00 00 12 34', 'refund', 'refund 12.34'),
];

/** Serial frames of §10.1: V1-V12 public, the rest computed by the notes. */
export const SERIAL_FRAMES: readonly { id: string; frame: Buffer; apdu: Buffer }[] = [
  ['V1', '10 02 06 00 06 12 34 56 BA 09 78 10 03 24 C3', '06 00 06 12 34 56 BA 09 78'],
  ['V2', '10 02 06 93 03 12 34 56 10 03 CA A4', '06 93 03 12 34 56'],
  [
    'V3',
    '10 02 06 01 0A 04 00 00 00 01 10 10 00 49 09 78 10 03 F2 FF',
    '06 01 0A 04 00 00 00 01 10 00 49 09 78',
  ],
  ['V4', '10 02 06 70 00 10 03 D9 F9', '06 70 00'],
  [
    'V5',
    '10 02 06 D1 19 00 47 65 73 61 6D 74 20 20 20 20 20 20 30 20 20 20 20 20 20 20 30 2C 30 30 10 03 B5 AB',
    '06 D1 19 00 47 65 73 61 6D 74 20 20 20 20 20 20 30 20 20 20 20 20 20 20 30 2C 30 30',
  ],
  ['V6', '10 02 80 00 00 10 03 F5 1F', '80 00 00'],
  ['V7', '10 02 84 9C 00 10 03 C3 41', '84 9C 00'],
  ['V8', '10 02 06 18 00 10 03 56 3A', '06 18 00'],
  [
    'V9',
    '10 02 06 E0 25 F1 F1 F6 46 41 48 52 45 52 4E 55 4D 4D 45 52 20 20 20 20 F2 F1 F5 45 49 4E 47 45 42 45 4E 20 55 4E 44 20 4F 4B 10 03 DE CD',
    '06 E0 25 F1 F1 F6 46 41 48 52 45 52 4E 55 4D 4D 45 52 20 20 20 20 F2 F1 F5 45 49 4E 47 45 42 45 4E 20 55 4E 44 20 4F 4B',
  ],
  ['V10', '10 02 05 01 03 12 34 56 10 03 E0 43', '05 01 03 12 34 56'],
  ['V11', '10 02 05 01 05 12 34 56 03 04 10 03 30 94', '05 01 05 12 34 56 03 04'],
  [
    'V12',
    '10 02 06 0F 0B F0 F0 F7 32 2E 31 34 2E 31 35 00 10 03 B1 11',
    '06 0F 0B F0 F0 F7 32 2E 31 34 2E 31 35 00',
  ],
  ['06 B0', '10 02 06 B0 00 10 03 43 F3', '06 B0 00'],
  ['06 0F', '10 02 06 0F 00 10 03 C6 33', '06 0F 00'],
  ['06 1E', '10 02 06 1E 01 6C 10 03 C9 F2', '06 1E 01 6C'],
  ['04 0F', '10 02 04 0F 02 27 00 10 03 83 FE', '04 0F 02 27 00'],
  ['06 50', '10 02 06 50 03 12 34 56 10 03 C4 AF', '06 50 03 12 34 56'],
].map(([id, frame, apdu]) => ({
  id: id as string,
  frame: fromHex(frame as string),
  apdu: fromHex(apdu as string),
}));
