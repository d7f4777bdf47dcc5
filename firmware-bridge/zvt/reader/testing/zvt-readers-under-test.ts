/**
 * ZVT terminals the card-reader contract runs against through the ZVT driver: the emulated
 * ZVT terminal over a stream pair with the serial framing (clean or noisy), on a pty opened
 * with node-serialport, over TCP, or a real terminal (`TEST_ZVT_PORT`, `TEST_ZVT_TCP`).
 * Each reader under test has its own state file, kept across connect()s as the agent's
 * data directory is kept across its restarts.
 */
import { z } from 'zod';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import {
  ZvtTerminalEmulator,
  type ZvtTerminalOptions,
} from '../../../emulator/zvt/zvt-terminal.js';
import { listenTcp, serveSerial } from '../../../emulator/zvt/terminal-server.js';
import { ReaderEventLog } from '../../../reader/reader-events.js';
import type { ReaderUnderTest } from '../../../reader/testing/readers-under-test.js';
import { createStreamPair, type LineFaults } from '../../../serial/stream-pair.js';
import { openPty, type PtyBackend } from '../../../transport/pty.js';
import type { ApduChannel } from '../../channel.js';
import { ZvtSerialLink, type ZvtSerialLinkOptions } from '../../serial-link.js';
import { openZvtChannel, type ZvtTarget } from '../connect.js';
import type { ZvtProfileName } from '../profiles.js';
import { openZvtCardReader, type ZvtCardReader } from '../zvt-card-reader.js';

export interface ZvtUnderTestOptions {
  terminal?: ZvtTerminalOptions;
  profile?: ZvtProfileName;
  /** Serial link options of both ends (short ACK timeouts on a noisy in-memory line). */
  link?: ZvtSerialLinkOptions;
  faults?: LineFaults;
  seed?: number;
}

/** What a normal emulated payment takes: long enough to crash the host in the middle. */
const DELAY_MS = 300;

interface Line {
  channel: ApduChannel;
  /** Goes away as a dying process's line does. */
  pull(): Promise<void>;
}

function zvtReader(
  name: string,
  timeoutMs: number,
  openLine: () => Promise<Line>,
  extra: { terminal?: ZvtTerminalEmulator; profile?: ZvtProfileName; close?: () => Promise<void> },
): ReaderUnderTest<ZvtCardReader> & { terminal?: ZvtTerminalEmulator; stateFile: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'zvt-driver-'));
  const stateFile = path.join(dir, 'zvt-state.json');
  const lines = new Map<ZvtCardReader, Line>();
  return {
    name,
    timeoutMs,
    terminal: extra.terminal,
    stateFile,
    async connect() {
      const line = await openLine();
      const reader = await openZvtCardReader({
        channel: line.channel,
        stateFile,
        profile: extra.profile,
      });
      lines.set(reader, line);
      return { reader, events: new ReaderEventLog(reader) };
    },
    async crash({ reader }) {
      await (lines.get(reader) as Line).pull();
    },
    async close() {
      for (const [reader, line] of lines) {
        await reader.close().catch(() => undefined);
        await line.pull();
      }
      await extra.terminal?.close();
      await extra.close?.();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function destroy(stream: Duplex): Promise<void> {
  if (stream.destroyed) return;
  await new Promise<void>((resolve) => {
    stream.once('close', () => resolve());
    stream.destroy();
  });
}

/** The emulated ZVT terminal over an in-memory line with the ZVT serial framing. */
export function emulatedZvtReader(options: ZvtUnderTestOptions = {}) {
  const terminal = new ZvtTerminalEmulator({ delayMs: DELAY_MS, ...options.terminal });
  return zvtReader(
    options.faults
      ? 'emulated ZVT terminal, noisy stream pair'
      : 'emulated ZVT terminal, stream pair',
    15_000,
    async () => {
      const pair = createStreamPair({
        seed: options.seed,
        aToB: options.faults,
        bToA: options.faults,
      });
      serveSerial(terminal, pair.b, options.link);
      const channel = new ZvtSerialLink(pair.a, options.link);
      return { channel, pull: () => destroy(pair.a) };
    },
    { terminal, profile: options.profile },
  );
}

/** The emulated ZVT terminal on a pty; the driver opens its path with node-serialport. */
export async function emulatedZvtReaderOnPty(
  options: ZvtUnderTestOptions & { backend?: PtyBackend } = {},
) {
  const pty = await openPty({ backend: options.backend });
  const terminal = new ZvtTerminalEmulator({ delayMs: DELAY_MS, ...options.terminal });
  serveSerial(terminal, pty.stream, options.link);
  return zvtReader(
    `emulated ZVT terminal on ${pty.description}`,
    15_000,
    async () => {
      const channel = await openZvtChannel({ port: pty.path, baudRate: 115_200 });
      return { channel, pull: () => channel.close() };
    },
    { terminal, profile: options.profile, close: () => pty.close() },
  );
}

/** The emulated ZVT terminal listening on an ephemeral TCP port. */
export async function emulatedZvtReaderOnTcp(options: ZvtUnderTestOptions = {}) {
  const terminal = new ZvtTerminalEmulator({ delayMs: DELAY_MS, ...options.terminal });
  const listener = await listenTcp(terminal, { port: 0 });
  return zvtReader(
    `emulated ZVT terminal on tcp://127.0.0.1:${listener.port}`,
    15_000,
    async () => {
      const channel = await openZvtChannel({ tcp: `127.0.0.1:${listener.port}` });
      return { channel, pull: () => channel.close() };
    },
    { terminal, profile: options.profile, close: () => listener.close() },
  );
}

/** A real ZVT terminal: `TEST_ZVT_PORT` (serial device) or `TEST_ZVT_TCP` (HOST:PORT). */
export function realZvtTarget(env: NodeJS.ProcessEnv = process.env): ZvtTarget | undefined {
  if (env.TEST_ZVT_TCP) return { tcp: env.TEST_ZVT_TCP };
  if (env.TEST_ZVT_PORT) {
    const baud = Number(env.TEST_ZVT_BAUD ?? '');
    return { port: env.TEST_ZVT_PORT, ...(baud > 0 ? { baudRate: baud } : {}) };
  }
  return undefined;
}

export function realZvtReader(
  target: ZvtTarget,
  profile = (process.env.TEST_ZVT_PROFILE as ZvtProfileName | undefined) ?? 'generic',
) {
  const label = 'tcp' in target ? `tcp://${target.tcp}` : target.port;
  return zvtReader(
    `ZVT terminal at ${label}`,
    180_000,
    async () => {
      const channel = await openZvtChannel(target);
      return { channel, pull: () => channel.close() };
    },
    { profile },
  );
}

/**
 * What the contract's decline case charges on a real terminal: a real host approves any
 * amount the emulator's trigger amounts would decline. `TEST_ZVT_DECLINE_AMOUNT` (minor
 * units) names the amount the terminal's own test card or test host declines; without it
 * the case is skipped, and says why.
 */
export function realZvtDecline(
  env: NodeJS.ProcessEnv = process.env,
): { amount: number } | { skip: string } {
  const raw = env.TEST_ZVT_DECLINE_AMOUNT;
  if (raw === undefined || raw === '') {
    return {
      skip: 'a real host approves the emulator trigger amount; set TEST_ZVT_DECLINE_AMOUNT to the amount its test card declines',
    };
  }
  return { amount: z.coerce.number().int().positive().parse(raw) };
}
