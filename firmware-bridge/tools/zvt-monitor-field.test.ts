/**
 * The ZVT monitor replayed on bytes real terminals sent (zvt/testing/field-captures.ts names
 * each source and terminal): text in the terminal's character set, completions of commands
 * the codec does not know, every registered command by name, and card numbers masked.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maskCardNumber } from '../../protocol/transaction.js';
import { PROPERTY } from '../zvt/testing/arbitraries.js';
import { fromHex } from '../zvt/apdu.js';
import {
  CARDCOMPLETE_CLOSURE_RECEIPT,
  CARDCOMPLETE_DISPLAY_ANNOUNCED,
  CARDCOMPLETE_PRINT_LINE_ANNOUNCED,
  FEIG_CHANGE_CONFIGURATION,
  FEIG_FILE_ACK,
  FEIG_GIROCARD_CLEAR_PAN,
  FEIG_GIROCARD_PAN,
  FEIG_PROPRIETARY_EXCHANGE,
  FEIG_REQUEST_FILE,
  FEIG_WRITE_FILE,
  HOBEX_CUSTOMER_RECEIPT,
  STATUS_ENQUIRY,
} from '../zvt/testing/field-captures.js';
import { apduText } from './zvt-frame-text.js';
import { ZvtLineTap, type ZvtMonitorOptions } from './zvt-monitor.js';

const at = () => new Date('2026-01-01T12:00:01.250Z');

async function monitor(
  apdus: readonly Buffer[],
  options: Partial<ZvtMonitorOptions> = {},
): Promise<string[]> {
  const lines: string[] = [];
  const tap = new ZvtLineTap({
    print: (line) => lines.push(line),
    now: at,
    framing: 'tcp',
    ...options,
  });
  for (const apdu of apdus) tap.write(apdu);
  await new Promise((resolve) => setTimeout(resolve, 20));
  return lines.map((line) => line.replace(/^\S+ {2}/, ''));
}

describe('ZVT monitor on field captures', () => {
  it('shows receipt text in CP437, or in the set a TLV 14 announces', async () => {
    const [hobex, cardComplete] = await monitor(
      [HOBEX_CUSTOMER_RECEIPT, CARDCOMPLETE_CLOSURE_RECEIPT],
      { full: true },
    );
    // hobex: "f 81 r" in CP437; CardComplete: 14 02 announces ISO 8859-2 ("H C4 NDLER…").
    expect(hobex).toContain('07="     für PORTALUM GmbH"');
    expect(hobex).toContain('07="        KUNDENBELEG"');
    expect(hobex).toContain('07="AID: A0000000041010"');
    expect(cardComplete).toContain('14=02');
    expect(cardComplete).toContain('07="             HÄNDLERBELEG"');
    expect(cardComplete).toContain('späteren');
  });

  it('reads a 06 D1 and a 04 FF display text in the set a TLV 14 beside them announces', async () => {
    const [line, display] = await monitor([
      CARDCOMPLETE_PRINT_LINE_ANNOUNCED,
      CARDCOMPLETE_DISPLAY_ANNOUNCED,
    ]);
    expect(line).toContain('attr 00 "Überprüfung auf"');
    expect(display).toContain('24{07="Überprüfung auf"}');
  });

  it('reads a completion of a command it does not know by its data, also after 05 01', async () => {
    const lines = await monitor([STATUS_ENQUIRY, ...FEIG_PROPRIETARY_EXCHANGE]);
    expect(lines).toEqual([
      'ecr→pt  05 01 status enquiry  password 123456',
      'ecr→pt  06 00 registration  password 123456 config DE currency 0978',
      'pt→ecr  06 0F completion  19 status-byte=10 29 terminal-id=52523535 49 currency=978',
      'ecr→pt  0F A1 proprietary  data 00 01',
      expect.stringMatching(/^pt→ecr {2}06 0F completion \(to 0F A1\) {2}data 31 37 46 44 /),
    ]);
    const after = await monitor([fromHex('0F A1 02 00 01'), fromHex('06 0F 00')]);
    expect(after[1]).toBe('pt→ecr  06 0F completion (to 0F A1)');
  });

  it('names the service commands and a long-form acknowledgement by its control field', async () => {
    const lines = await monitor([
      FEIG_WRITE_FILE,
      FEIG_REQUEST_FILE,
      FEIG_FILE_ACK,
      FEIG_CHANGE_CONFIGURATION,
    ]);
    expect(lines[0]).toMatch(/^ecr→pt {2}08 14 write file {2}data /);
    expect(lines[1]).toMatch(/^pt→ecr {2}04 0C request file {2}data /);
    expect(lines[2]).toBe('pt→ecr  80 00 positive acknowledgement 06 tlv={}');
    expect(lines[3]).toMatch(/^ecr→pt {2}08 13 change configuration {2}data /);
    const short = await monitor([fromHex('84 9C 00'), fromHex('06 E6 00'), fromHex('06 95 00')]);
    expect(short[0]).toMatch(/84 9C 00 negative acknowledgement/);
    expect(short[1]).toMatch(/06 E6 card poll with authorisation$/);
    expect(short[2]).toMatch(/06 95 change password$/);
  });

  it('masks a card number sent in clear, in text and JSON, also with --full', async () => {
    for (const options of [{}, { full: true }, { json: true }, { json: true, full: true }]) {
      const [line = ''] = await monitor([FEIG_GIROCARD_CLEAR_PAN], options);
      expect(line).toContain('22 pan=471100*********8004');
      expect(line).not.toContain(FEIG_GIROCARD_PAN);
      expect(line).not.toContain(FEIG_GIROCARD_PAN.slice(6, 15));
    }
  });

  it('masks card numbers printed in clear in texts, and EMV track data in TLVs', async () => {
    // A 06 D1 line as a terminal would print a clear number, and a TLV 57 (track 2
    // equivalent) built from the girocard capture's number.
    const text = Buffer.from(`Karte ${FEIG_GIROCARD_PAN}`, 'latin1');
    const printLine = Buffer.concat([Buffer.from([0x06, 0xd1, text.length + 1, 0x00]), text]);
    const lines = await monitor([
      printLine,
      fromHex('04 0F 0E 27 00 06 0A 57 08 47 11 00 80 05 75 70 38'),
    ]);
    expect(lines[0]).toContain('"Karte 471100*********8004"');
    expect(lines[1]).toContain('57=(8 bytes, not shown)');
  });

  it('never shows more than the first 6 and last 4 digits of any card number in BMP 22 (property)', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[0-9]{13,19}$/),
        fc.boolean(),
        fc.constantFrom<'shown' | 'hidden'>('shown', 'hidden'),
        (pan, full, cardData) => {
          const nibbles = pan.length % 2 === 0 ? pan : `${pan}F`;
          const bcd = Buffer.from(nibbles, 'hex');
          const ll = Buffer.from([0xf0 | Math.floor(bcd.length / 10), 0xf0 | (bcd.length % 10)]);
          const data = Buffer.concat([Buffer.from([0x27, 0x00, 0x22]), ll, bcd]);
          const apdu = Buffer.concat([Buffer.from([0x04, 0x0f, data.length]), data]);
          const { text } = apduText(apdu, {}, full, { cardData });
          expect(text).not.toContain(pan);
          const shown = /22 pan=(\S+)/.exec(text)?.[1];
          if (cardData === 'shown') expect(shown).toBe(maskCardNumber(pan));
          else expect(text).toMatch(/22 pan=\(\d+ bytes, not shown\)/);
        },
      ),
      PROPERTY,
    );
  });
});
