/** The bench tools as functions, in process: monitor and probe over stream pairs. */
import { describe, expect, it } from 'vitest';
import { CardReaderFirmware } from '../emulator/card-reader-firmware.js';
import { createStreamPair } from '../serial/stream-pair.js';
import { monitorBetween, monitorPort } from './monitor.js';
import { probeReader, probeText } from './probe.js';

const at = () => new Date(2025, 0, 1, 12, 0, 1, 250);

describe('monitor', () => {
  it('sits between host and reader: forwards both ways, names each direction, cuts receipts', async () => {
    const hostLine = createStreamPair();
    const readerLine = createStreamPair();
    const firmware = new CardReaderFirmware({ delayMs: 0 });
    firmware.serve(readerLine.b);
    const lines: string[] = [];
    monitorBetween(readerLine.a, hostLine.b, {
      print: (l) => lines.push(l),
      now: at,
      names: ['R', 'H'],
    });
    const report = await probeReader(hostLine.a);
    expect(report.ok).toBe(true);
    await firmware.close();
    expect(
      lines.some((l) =>
        /^12:00:01\.250 {2}host→reader {2}H→R {2}DATA #\d+ SYN {2}status\.query \{"query_id":/.test(
          l,
        ),
      ),
    ).toBe(true);
    expect(lines.some((l) => /reader→host {2}R→H {2}ACK {2}#\d+$/.test(l))).toBe(true);
    expect(
      lines.some((l) =>
        /reader→host {2}R→H {2}DATA #\d+.* last_transaction\.answer \{"query_id":"[^"]+","transaction":null\}/.test(
          l,
        ),
      ),
    ).toBe(true);
  });

  it('on one port, learns who talks from the messages and reports damaged frames', async () => {
    const line = createStreamPair();
    const lines: string[] = [];
    monitorPort(line.a, { print: (l) => lines.push(l), now: at });
    line.b.write(
      Buffer.from([0xc0, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0xc0]),
    );
    const firmware = new CardReaderFirmware({ link: { ackTimeoutMs: 5, maxRetries: 0 } });
    firmware.serve(line.b);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await firmware.close();
    expect(lines[0]).toMatch(/peer {9}drop bad-crc \(10 bytes\)$/);
    expect(lines[1]).toMatch(
      /reader→host {2}DATA #\d+ SYN {2}status\.report \{"battery_percentage":80,/,
    );
  });

  it('--json: one JSON object a line, with the time, who sent it and the decoded frame', async () => {
    const line = createStreamPair();
    const lines: string[] = [];
    monitorPort(line.a, { print: (l) => lines.push(l), now: at, json: true });
    line.b.write(
      Buffer.from([0xc0, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0xc0]),
    );
    const firmware = new CardReaderFirmware({ link: { ackTimeoutMs: 5, maxRetries: 0 } });
    firmware.serve(line.b);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await firmware.close();
    const entries = lines.map((l) => JSON.parse(l) as Record<string, string>);
    expect(entries[0]).toEqual({
      at: at().toISOString(),
      from: 'peer',
      to: 'peer',
      text: 'drop bad-crc (10 bytes)',
    });
    expect(entries[1]).toMatchObject({ from: 'reader', to: 'host' });
    expect(entries[1]!.text).toMatch(/^DATA #\d+ SYN {2}status\.report \{"battery_percentage":80,/);
  });
});

describe('probe', () => {
  it('reports status and last transaction for a person', async () => {
    const line = createStreamPair();
    const firmware = new CardReaderFirmware({ battery: { percentage: 42, pluggedIn: true } });
    firmware.serve(line.b);
    const report = await probeReader(line.a);
    await firmware.close();
    expect(report).toEqual({
      ok: true,
      errors: [],
      status: {
        battery_percentage: 42,
        battery_charging: true,
        plugged_in: true,
        screen_message: 'Ready',
      },
      lastTransaction: null,
    });
    expect(probeText('/dev/pts/9', report)).toBe(
      'card reader at /dev/pts/9 answers\n' +
        '  status:           battery 42 %, charging, plugged in, screen "Ready"\n' +
        '  last transaction: none\n',
    );
  });

  it('says what failed when nothing answers', async () => {
    const line = createStreamPair();
    const report = await probeReader(line.a, { timeoutMs: 100 });
    expect(report.ok).toBe(false);
    expect(report.errors).toEqual([
      expect.stringMatching(/^status: ACK_TIMEOUT/),
      expect.stringMatching(/^last transaction: ACK_TIMEOUT/),
    ]);
    expect(probeText('x', report)).toMatch(
      /^card reader at x: NO ANSWER\n {2}error: status: ACK_TIMEOUT/,
    );
  });
});
