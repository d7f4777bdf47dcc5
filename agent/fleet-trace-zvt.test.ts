import { EventEmitter } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { bmpsFrom } from '../firmware-bridge/zvt/bmp-values.js';
import type { ApduChannel } from '../firmware-bridge/zvt/channel.js';
import { authorisation, registration } from '../firmware-bridge/zvt/command-builders.js';
import { messageBytes } from '../firmware-bridge/zvt/messages.js';
import type { ReaderResult } from '../firmware-bridge/reader/card-reader.js';
import { LineTrace } from './fleet-trace.js';
import { emulatedZvtReader } from './zvt-reader.js';

const clock = { now: () => new Date('2026-11-24T10:00:00Z') };
const PASSWORD = '314159';

describe('the trace of a ZVT terminal', () => {
  it('has the APDUs of the last payment in order, without the password or a card number', async () => {
    const trace = new LineTrace(clock);
    const dir = mkdtempSync(path.join(tmpdir(), 'zvt-trace-'));
    const emulated = emulatedZvtReader({
      stateFile: path.join(dir, 'zvt-reader.json'),
      password: PASSWORD,
      terminal: { delayMs: 0 },
      trace,
    });
    try {
      const pay = async (id: string) => {
        const result = new Promise<ReaderResult>((resolve) =>
          emulated.reader.on('result', (r) => r.transaction_id === id && resolve(r)),
        );
        await emulated.reader.start({
          transaction_id: id,
          kind: 'PURCHASE',
          requested_amount: 1250,
          currency: 'EUR',
          pause_on_customer_identified: false,
        });
        return result;
      };
      expect((await pay('tx-1')).result_code).toBe('SUCCESS');
      expect((await pay('tx-2')).result_code).toBe('SUCCESS');
      const { frames, dropped } = trace.snapshot();
      expect(dropped).toBe(0);
      const texts = frames.map((f) => `${f.direction} ${f.text}`);
      // The second payment only, from the ECR's 06 01 to the PT's completion, acknowledged.
      expect(texts[0]).toMatch(/^host→reader 06 01 authorisation {2}04 amount=1250/);
      const order = [
        /^reader→host 80 00 00 positive acknowledgement/,
        /^reader→host 04 0F status information {2}27 result-code=00/,
        /^host→reader 80 00 00/,
        /^reader→host 06 0F completion/,
        /^host→reader 80 00 00/,
      ];
      let at = 0;
      for (const pattern of order) {
        const found = texts.findIndex((text, i) => i > at && pattern.test(text));
        expect(found, `${pattern} after line ${at} in\n${texts.join('\n')}`).toBeGreaterThan(at);
        at = found;
      }
      const statusInformation = texts.find((t) => t.includes('04 0F status information'))!;
      expect(statusInformation).toMatch(/22 pan=\(\d+ bytes, not shown\)/);
      const all = JSON.stringify(frames);
      expect(all).not.toContain(PASSWORD);
      expect(all).not.toMatch(/\d{12,19}/);
      // The receipt's masked card number keeps only its last 4 digits.
      expect(all).toContain('************0119');
      expect(all).not.toContain('476173******0119');
    } finally {
      await emulated.close();
    }
  });

  it('hides a PAN, the expiry and track data a terminal failed to mask, both ways', async () => {
    const trace = new LineTrace(clock);
    const peer = new EventEmitter();
    const sent: Buffer[] = [];
    const channel = Object.assign(peer, {
      closed: false,
      send: async (apdu: Buffer) => void sent.push(apdu),
      close: async () => undefined,
    }) as unknown as ApduChannel;
    trace.tapApdus(channel);
    const manual = authorisation(500);
    if (manual.type === 'authorisation') {
      // Track 2 keyed in by hand: the PAN, the separator (D) and the expiry.
      manual.bmps.push({ tag: 0x23, format: 'bcd', value: '4761739001010119D2812F' });
    }
    await channel.send(messageBytes(manual));
    await channel.send(messageBytes(registration({ password: PASSWORD })));
    peer.emit(
      'apdu',
      messageBytes({ type: 'print-line', attribute: 0, text: 'VISA    476173******0119' }),
    );
    peer.emit(
      'apdu',
      messageBytes({
        type: 'status-information',
        bmps: bmpsFrom({ resultCode: 0, amount: 500, pan: '4761739001010119', expiryDate: '2812' }),
      }),
    );
    expect(sent).toHaveLength(2); // the driver's APDUs still go out
    const texts = trace.snapshot().frames.map((f) => f.text);
    expect(texts).toHaveLength(4);
    expect(texts[0]).toMatch(/23 [^=]*=\(\d+ bytes, not shown\)/);
    expect(texts[1]).toMatch(/^06 00 registration {2}password \(not shown\)/);
    expect(texts[2]).toBe('06 D1 print line  attr 00 "VISA    ************0119"');
    expect(texts[3]).toMatch(/22 pan=\(8 bytes, not shown\)/);
    expect(texts[3]).toMatch(/0E expiry[^=]*=\(2 bytes, not shown\)/);
    const all = texts.join('\n');
    expect(all).not.toContain('4761739001010119');
    expect(all).not.toContain('476173');
    expect(all).not.toContain('2812');
    expect(all).not.toContain(PASSWORD);
  });
});
