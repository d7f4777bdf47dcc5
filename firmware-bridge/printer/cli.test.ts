import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createStreamPair } from '../serial/stream-pair.js';
import { openSerial, runBridgePrint, type BridgePrintIo } from './cli.js';
import {
  startEmulatedNetworkPrinter,
  type EmulatedNetworkPrinter,
} from './emulated-network-printer.js';
import { EmulatedPrinter } from './emulated-printer.js';
import { pngToRaster } from './png-raster.js';
import { receiptLike } from './testing/images.js';

let dir: string;
let file: string;
const png = receiptLike(500, 80);
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tps-print-'));
  file = join(dir, 'receipt.png');
  await writeFile(file, png);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

let server: EmulatedNetworkPrinter | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function io(overrides: Partial<BridgePrintIo> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const value: BridgePrintIo = {
    stdout: { write: (text: string) => out.push(text) },
    stderr: { write: (text: string) => err.push(text), isTTY: false },
    now: () => performance.now(),
    readFile: async (path) => (await import('node:fs/promises')).readFile(path),
    openSerial: () => Promise.reject(new Error('no serial port in this test')),
    ...overrides,
  };
  return { io: value, out, err };
}

describe('tps bridge print', () => {
  it('prints a PNG on a tcp:// printer and says what it did', async () => {
    server = await startEmulatedNetworkPrinter({ headWidth: 576 });
    const { io: deps, out } = io();
    await runBridgePrint([server.url, file, '--width', '576'], deps);
    expect(server.printer.jobs[0]?.raster).toEqual(pngToRaster(png, { headWidth: 576 }));
    expect(out.join('')).toMatch(
      new RegExp(
        `^printed 576×80 dots on ${server.url}: 1 band\\(s\\), \\d+ bytes in \\d+ ms; paper ok\\n$`,
      ),
    );
  });

  it('takes --tcp HOST:PORT, --dither, --band-rows and --cut', async () => {
    server = await startEmulatedNetworkPrinter();
    const { io: deps } = io();
    const address = `${server.host}:${server.port}`;
    await runBridgePrint(
      ['--tcp', address, file, '--dither', '--band-rows', '24', '--cut', 'full'],
      deps,
    );
    const job = server.printer.jobs[0]!;
    expect(job.raster).toEqual(pngToRaster(png, { headWidth: 384, dither: true }));
    expect(job).toMatchObject({ bands: 3, cut: 'full' });
  });

  it('opens a serial PORT through openSerial', async () => {
    const pair = createStreamPair();
    const emulated = new EmulatedPrinter();
    emulated.attach(pair.b);
    const opened: [string, number][] = [];
    const { io: deps, out } = io({
      openSerial: async (path, baud) => {
        opened.push([path, baud]);
        return pair.a;
      },
    });
    await runBridgePrint(['/dev/ttyUSB0', file, '--baud', '19200'], deps);
    expect(opened).toEqual([['/dev/ttyUSB0', 19200]]);
    expect(emulated.jobs).toHaveLength(1);
    expect(out.join('')).toContain('on /dev/ttyUSB0');
  });

  it('fails with the printer error code, saying whether the job was sent', async () => {
    server = await startEmulatedNetworkPrinter();
    server.printer.setPaperOut(true);
    const { io: deps } = io();
    await expect(runBridgePrint([server.url, file], deps)).rejects.toThrow(
      /^PAPER_OUT: printer reports paper out; the job was not sent$/,
    );
    server.printer.setPaperOut(false);
    server.printer.setCoverOpen(true);
    await expect(runBridgePrint([server.url, file], deps)).rejects.toThrow(/COVER_OPEN/);
  });

  it('--json prints the result as one JSON object, and no progress when stderr is no terminal', async () => {
    server = await startEmulatedNetworkPrinter();
    const { io: deps, out, err } = io();
    await runBridgePrint([server.url, file, '--json'], deps);
    expect(JSON.parse(out.join(''))).toEqual({
      port: server.url,
      width: 384,
      rows: expect.any(Number),
      bands: 1,
      bytes: expect.any(Number),
      ms: expect.any(Number),
      paper: 'ok',
    });
    expect(err).toEqual([]);
  });

  it('--progress reports bytes sent, the share and the time left on stderr, throttled', async () => {
    server = await startEmulatedNetworkPrinter();
    // Each reading of the clock is 400 ms later: a slow line, without waiting for one.
    let clock = 0;
    const { io: deps, out, err } = io({ now: () => (clock += 400) });
    const tall = join(dir, 'tall.png');
    await writeFile(tall, receiptLike(384, 4000));
    await runBridgePrint([server.url, tall, '--progress', '--json'], deps);
    const lines = err.join('').trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(2);
    // Far fewer lines than pieces written (1 KiB each): at most one per 5 s of this clock.
    const { bytes } = JSON.parse(out.join('')) as { bytes: number };
    expect(lines.length).toBeLessThan(Math.ceil(bytes / 1024) / 5);
    expect(lines[1]).toMatch(
      /^tps bridge print: [\d,]+ of [\d,]+ bytes sent \(\d+ %\), about \d+ (s|min \d+ s) left$/,
    );
    expect(lines.at(-1)).toMatch(/^tps bridge print: ([\d,]+) of \1 bytes sent \(100 %\), done in/);
    expect(out.join('')).not.toMatch(/bytes sent/);
  });

  it('refuses bad arguments with a clear message', async () => {
    const { io: deps } = io();
    await expect(runBridgePrint([file], deps)).rejects.toThrow(/expected PORT and FILE.png/);
    await expect(runBridgePrint(['tcp://h:1', file, '--width', '500'], deps)).rejects.toThrow(
      /multiple of 8/,
    );
    await expect(runBridgePrint(['tcp://h:1', file, '--cut', 'half'], deps)).rejects.toThrow(
      /--cut must be one of partial, full, none/,
    );
    await expect(runBridgePrint(['tcp://h:1', file, '--bogus'], deps)).rejects.toThrow(/bogus/);
    await expect(runBridgePrint(['tcp://:x', file], deps)).rejects.toThrow(
      /not a tcp:\/\/HOST:PORT/,
    );
  });

  it('prints its usage with --help', async () => {
    const { io: deps, out } = io();
    await runBridgePrint(['--help'], deps);
    expect(out.join('')).toMatch(/^Usage: tps bridge print PORT FILE.png/);
  });

  it('explains how to get serial support when serialport is missing', async () => {
    // Either serialport is not installed (the message says so), or it is and this path fails.
    await expect(openSerial('/dev/tps-no-such-port', 9600)).rejects.toThrow(
      /'serialport' package, which is not installed|cannot open \/dev\/tps-no-such-port/,
    );
  });
});
