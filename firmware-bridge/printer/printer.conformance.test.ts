/**
 * One suite, every transport: the driver over an in-memory stream pair and over TCP to the
 * emulated network printer; and a real printer when TEST_PRINTER_PORT names one (a serial
 * device, or tcp://host:9100), with TEST_PRINTER_WIDTH (default 384). On hardware the
 * suite prints two short test receipts.
 */
import type { Duplex } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createStreamPair } from '../serial/stream-pair.js';
import { openSerial } from './cli.js';
import { startEmulatedNetworkPrinter } from './emulated-network-printer.js';
import { EmulatedPrinter } from './emulated-printer.js';
import { pngToRaster } from './png-raster.js';
import { ReceiptPrinter } from './printer.js';
import { connectTcpPrinter, parseTcpAddress } from './tcp.js';
import { checkerboard, receiptLike } from './testing/images.js';

interface Harness {
  printer: ReceiptPrinter;
  headWidth: number;
  /** Absent on real hardware. */
  emulated?: EmulatedPrinter;
  close(): Promise<void>;
}

const endStream = (stream: Duplex) =>
  new Promise<void>((resolve) => {
    stream.once('close', () => resolve());
    stream.destroy();
  });

const transports: [string, () => Promise<Harness>][] = [
  [
    'stream pair',
    async () => {
      const pair = createStreamPair();
      const emulated = new EmulatedPrinter({ headWidth: 384 });
      emulated.attach(pair.b);
      const printer = new ReceiptPrinter(pair.a, { headWidth: 384 });
      return { printer, emulated, headWidth: 384, close: () => endStream(pair.a) };
    },
  ],
  [
    'tcp',
    async () => {
      const server = await startEmulatedNetworkPrinter({ headWidth: 576 });
      const socket = await connectTcpPrinter({ host: server.host, port: server.port });
      const printer = new ReceiptPrinter(socket, { headWidth: 576 });
      return {
        printer,
        emulated: server.printer,
        headWidth: 576,
        close: async () => {
          await endStream(socket);
          await server.close();
        },
      };
    },
  ],
];

const hardware = process.env.TEST_PRINTER_PORT;
if (hardware) {
  transports.push([
    `hardware ${hardware}`,
    async () => {
      const headWidth = Number(process.env.TEST_PRINTER_WIDTH ?? 384);
      const address = hardware.startsWith('tcp://') ? parseTcpAddress(hardware) : undefined;
      const stream = address
        ? await connectTcpPrinter(address)
        : await openSerial(hardware, Number(process.env.TEST_PRINTER_BAUD ?? 9600));
      const printer = new ReceiptPrinter(stream, { headWidth });
      return { printer, headWidth, close: () => endStream(stream) };
    },
  ]);
}

describe.each(transports)('ReceiptPrinter over %s', (_name, open) => {
  let harness: Harness | undefined;
  afterEach(async () => {
    harness?.printer.close();
    await harness?.close();
    harness = undefined;
  });

  it('reads the status of a ready printer', async () => {
    harness = await open();
    const status = await harness.printer.status();
    expect(status).toMatchObject({ online: true, coverOpen: false, paperOut: false, error: false });
  });

  it('prints, and the printer has exactly the raster', async () => {
    harness = await open();
    const png = receiptLike(harness.headWidth, 120);
    const result = await harness.printer.print(png);
    expect(result).toMatchObject({ width: harness.headWidth, rows: 120, status: { online: true } });
    if (harness.emulated)
      expect(harness.emulated.jobs[0]?.raster).toEqual(
        pngToRaster(png, { headWidth: harness.headWidth }),
      );
  });

  it('prints calls made at once one after the other', async () => {
    harness = await open();
    const { printer } = harness;
    await Promise.all([printer.print(checkerboard(64, 16)), printer.print(checkerboard(32, 8))]);
    if (harness.emulated)
      expect(harness.emulated.jobs.map((j) => j.raster.height)).toEqual([16, 8]);
  });
});
