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
  const value: BridgePrintIo = {
    stdout: { write: (text: string) => out.push(text) },
    readFile: async (path) => (await import('node:fs/promises')).readFile(path),
    openSerial: () => Promise.reject(new Error('no serial port in this test')),
    ...overrides,
  };
  return { io: value, out };
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
      /^bridge print: PAPER_OUT: printer reports paper out; the job was not sent$/,
    );
    server.printer.setPaperOut(false);
    server.printer.setCoverOpen(true);
    await expect(runBridgePrint([server.url, file], deps)).rejects.toThrow(/COVER_OPEN/);
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
