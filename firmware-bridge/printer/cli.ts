/** `tps bridge print`: prints a PNG on a receipt printer over serial or raw TCP. */
import { readFile } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import { UsageError, integerOption, parseCommandLine } from '../../common/cli.js';
import { progressReporter } from '../../common/progress.js';
import { PrinterError } from './errors.js';
import { ReceiptPrinter, type ConfirmMode, type PrintResult } from './printer.js';
import { connectTcpPrinter, parseTcpAddress } from './tcp.js';

export const PRINT_USAGE = `Usage: tps bridge print PORT FILE.png [options]
       tps bridge print --tcp HOST:PORT FILE.png [options]

Prints a PNG on an ESC/POS receipt printer, as a raster image, and reports the printer's
status (paper out, cover open, offline) with a non-zero exit code.

PORT is a serial device (/dev/ttyUSB0, /dev/ttyS1, COM3) or tcp://HOST:PORT for a network
printer's raw port (usually 9100).

Options:
  --width DOTS        head width in dots: 384 (58 mm, default) or 576 (80 mm)
  --dither            Floyd-Steinberg dithering (photos, logos) instead of a threshold
  --threshold N       luminance 0-255 below which a dot is black (default 128)
  --tcp HOST:PORT     a network printer, instead of PORT
  --baud N            serial line speed (default 9600; the printer's setting)
  --band-rows N       rows per GS v 0 command, 1-2303 (default 256; try 24 on garbled output)
  --cut MODE          partial (default), full or none
  --confirm MODE      printed (default: wait until printed), sent, or none (no status queries)
  --timeout MS        how long the job may take to print (default 10 s + 5 ms a row)
  --json              print the result as JSON: {port, width, rows, bands, bytes, ms, paper}
  --progress          show progress on stderr (bytes sent, %, time left) even when it
                      is no terminal (on a terminal it is shown anyway)
  -h, --help          this text
`;

/** What runBridgePrint reaches outside; tests replace it. */
export interface BridgePrintIo {
  stdout: { write(text: string): unknown };
  /** Progress goes here, never to stdout. */
  stderr: { write(text: string): unknown; isTTY?: boolean };
  now(): number;
  readFile(path: string): Promise<Uint8Array>;
  openSerial(path: string, baudRate: number): Promise<Duplex>;
}

const defaultIo: BridgePrintIo = {
  stdout: process.stdout,
  stderr: process.stderr,
  now: () => performance.now(),
  readFile: (path) => readFile(path),
  openSerial,
};

/**
 * `argv` is what follows `tps bridge print`. Throws a UsageError for wrong arguments and
 * an Error whose message says what failed otherwise.
 */
export async function runBridgePrint(argv: string[], io: BridgePrintIo = defaultIo): Promise<void> {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      allowPositionals: true,
      options: {
        width: { type: 'string', default: '384' },
        dither: { type: 'boolean', default: false },
        threshold: { type: 'string', default: '128' },
        tcp: { type: 'string' },
        baud: { type: 'string', default: '9600' },
        'band-rows': { type: 'string', default: '256' },
        cut: { type: 'string', default: 'partial' },
        confirm: { type: 'string', default: 'printed' },
        timeout: { type: 'string' },
        json: { type: 'boolean', default: false },
        progress: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    },
    PRINT_USAGE,
  );
  if (values.help) {
    io.stdout.write(PRINT_USAGE);
    return;
  }
  const expected = values.tcp === undefined ? 2 : 1;
  if (positionals.length !== expected)
    throw new UsageError(
      `expected ${expected === 2 ? 'PORT and FILE.png' : 'FILE.png (with --tcp)'}`,
      PRINT_USAGE,
    );
  const port = values.tcp === undefined ? positionals[0]! : `tcp://${values.tcp}`;
  const file = positionals[expected - 1]!;
  const headWidth = integer('--width', values.width, 8, 4096);
  if (headWidth % 8 !== 0) {
    throw new UsageError('--width must be a multiple of 8 dots', PRINT_USAGE);
  }
  const options = {
    headWidth,
    dither: values.dither,
    threshold: integer('--threshold', values.threshold, 0, 255),
    bandRows: integer('--band-rows', values['band-rows'], 1, 2303),
    cut: oneOf('--cut', values.cut, ['partial', 'full', 'none'] as const),
    confirm: oneOf('--confirm', values.confirm, [
      'printed',
      'sent',
      'none',
    ] as const) as ConfirmMode,
    ...(values.timeout === undefined
      ? {}
      : { printTimeoutMs: integer('--timeout', values.timeout, 1, 3_600_000) }),
  };
  const baudRate = integer('--baud', values.baud, 50, 4_000_000);

  const png = await io.readFile(file);
  const stream = await open(port, baudRate, io);
  const progress =
    values.progress || io.stderr.isTTY === true
      ? progressReporter({
          write: (text) => io.stderr.write(text),
          tty: io.stderr.isTTY === true,
          label: 'tps bridge print',
          unit: 'bytes sent',
          now: io.now,
        })
      : undefined;
  const onProgress = progress && ((sent: number, total: number) => progress.update(sent, total));
  const printer = new ReceiptPrinter(stream, { ...options, ...(onProgress && { onProgress }) });
  const started = io.now();
  try {
    const result = await printer.print(png);
    progress?.end();
    const ms = Math.round(io.now() - started);
    io.stdout.write(
      values.json ? `${JSON.stringify(resultJson(port, result, ms))}\n` : summary(port, result, ms),
    );
  } catch (error) {
    progress?.end();
    if (error instanceof PrinterError) throw new Error(explain(error), { cause: error });
    throw error;
  } finally {
    printer.close();
    await closeStream(stream);
  }
}

async function open(port: string, baudRate: number, io: BridgePrintIo): Promise<Duplex> {
  if (port.startsWith('tcp://')) {
    const address = parseTcpAddress(port);
    if (!address) throw new UsageError(`not a tcp://HOST:PORT address: ${port}`, PRINT_USAGE);
    try {
      return await connectTcpPrinter(address);
    } catch (error) {
      if (error instanceof PrinterError) throw new Error(explain(error), { cause: error });
      throw error;
    }
  }
  return io.openSerial(port, baudRate);
}

/** Minimal shape of the serialport package, loaded only when a serial port is used. */
interface SerialPortModule {
  SerialPort: new (options: { path: string; baudRate: number; autoOpen: boolean }) => Duplex & {
    open(callback: (error: Error | null) => void): void;
  };
}

/** Opens a serial port with the serialport package, if it is installed. */
export async function openSerial(path: string, baudRate: number): Promise<Duplex> {
  const name = 'serialport';
  let module: SerialPortModule;
  try {
    module = (await import(name)) as SerialPortModule;
  } catch {
    throw new Error(
      `serial ports need the 'serialport' package, which is not installed ` +
        `(npm install serialport); a network printer works without it: tcp://HOST:9100`,
    );
  }
  const port = new module.SerialPort({ path, baudRate, autoOpen: false });
  await new Promise<void>((resolve, reject) =>
    port.open((error) =>
      error
        ? reject(new Error(`cannot open ${path}: ${error.message.replace(/^Error: /, '')}`))
        : resolve(),
    ),
  );
  return port;
}

function closeStream(stream: Duplex): Promise<void> {
  if (stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('close', () => resolve());
    // end() first, so a socket's last bytes are sent before it closes.
    stream.end(() => stream.destroy());
  });
}

function summary(port: string, result: PrintResult, ms: number): string {
  const status = result.status;
  const paper = !status ? 'not queried' : status.paperNearEnd ? 'near end' : 'ok';
  return (
    `printed ${result.width}×${result.rows} dots on ${port}: ${result.bands} band(s), ` +
    `${result.bytes} bytes in ${ms} ms; paper ${paper}\n`
  );
}

function resultJson(port: string, result: PrintResult, ms: number) {
  const { width, rows, bands, bytes, status } = result;
  const paper = !status ? null : status.paperNearEnd ? 'near_end' : 'ok';
  return { port, width, rows, bands, bytes, ms, paper };
}

function explain(error: PrinterError): string {
  const sent = error.jobSent
    ? ' (the job reached the printer and may print once the cause is cleared)'
    : '';
  return `${error.code}: ${error.message}${sent}`;
}

function integer(flag: string, text: string, min: number, max: number): number {
  return integerOption(flag, text, { min, max }, PRINT_USAGE) as number;
}

function oneOf<T extends string>(flag: string, text: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(text))
    throw new UsageError(
      `${flag} must be one of ${allowed.join(', ')}, not '${text}'`,
      PRINT_USAGE,
    );
  return text as T;
}
