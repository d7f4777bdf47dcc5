/**
 * The card readers the agent end-to-end suites run against, each opened from an agent
 * config through `openHardware` as `tps agent` opens it, and each with a way to read what
 * the reader itself recorded (its memory file), so that a test checks the POS's answer
 * against the truth: the native emulated firmware on a stream pair; the emulated ZVT
 * terminal on a stream pair (serial framing), on a pty (serial framing, `reader.port`) and
 * on TCP (`reader.tcp`).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import {
  FileTerminalMemory,
  parseTerminalMemory,
  type JournalEntry,
} from '../../firmware-bridge/emulator/zvt/terminal-memory.js';
import { listenTcp, serveSerial } from '../../firmware-bridge/emulator/zvt/terminal-server.js';
import { ZvtTerminalEmulator } from '../../firmware-bridge/emulator/zvt/zvt-terminal.js';
import { openPty } from '../../firmware-bridge/transport/pty.js';
import type { ReaderProtocol } from '../../protocol/index.js';
import { parseAgentConfig, type AgentConfig } from '../../agent/config.js';
import { openHardware, type Hardware } from '../../agent/hardware.js';
import { readerRecord, readerRuns } from './e2e-parts.js';

/** What the reader did with a transaction, from its own memory. */
export type ReaderTruth = 'CHARGED' | 'REVERSED' | 'NOT_CHARGED' | 'UNKNOWN';

export interface ReaderUnderTest {
  hardware: Hardware;
  /** What the reader recorded for the transaction the POS sees (by id, or by ZVT reference). */
  truth(transaction: { id: string; reference?: string; requested_amount?: number }): ReaderTruth;
  /** How many times the reader ran a payment of the transaction (more than 1: charged twice). */
  runs(transaction: { id: string; reference?: string }): number;
  close(): Promise<void>;
}

export interface ReaderVariant {
  name: string;
  protocol: ReaderProtocol;
  /** Null when the variant cannot run here (no pty), with the reason. */
  open(dir: string, delayMs: number, logger: Logger): Promise<ReaderUnderTest>;
}

function hardwareFor(dir: string, reader: Record<string, unknown>, logger: Logger): Hardware {
  const parsed = parseAgentConfig(
    {
      terminal_id: 'T-readers',
      broker: { url: 'mqtt://127.0.0.1:1', username: 'u', password: 'p' },
      reader,
      data_dir: path.join(dir, 'agent-data'),
    },
    dir,
  );
  if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
  return openHardware(parsed.config satisfies AgentConfig, logger);
}

/** The ZVT terminal's entry of a payment, found by the receipt and trace numbers of its reference. */
function zvtEntryOf(entries: JournalEntry[], reference: string | undefined) {
  const match = /-(\d{4})-(\d{6})$/.exec(reference ?? '');
  if (!match) return undefined;
  return entries.find(
    (e) =>
      e.kind !== 'REVERSAL' &&
      e.receipt_number === Number(match[1]) &&
      e.trace_number === Number(match[2]),
  );
}

function zvtReader(memoryFile: string, hardware: Hardware, close: () => Promise<void>) {
  // The file holds every write of an entry; its last line is the entry now.
  const entries = () => [
    ...new Map(
      (existsSync(memoryFile) ? parseTerminalMemory(memoryFile) : []).map((e) => [e.seq, e]),
    ).values(),
  ];
  return {
    hardware,
    truth: (transaction: { reference?: string; requested_amount?: number }): ReaderTruth => {
      const all = entries();
      const entry = zvtEntryOf(all, transaction.reference);
      if (!entry) {
        // No reference: the terminal never answered with one. Then no approved payment of
        // that (test-unique) amount may exist.
        const charged = all.some(
          (e) => e.kind === 'PAYMENT' && e.approved && e.amount === transaction.requested_amount,
        );
        return charged ? 'UNKNOWN' : 'NOT_CHARGED';
      }
      if (entry.phase === 'IN_PROGRESS') return 'UNKNOWN';
      const reversal = all.find(
        (e) => e.kind === 'REVERSAL' && e.reverses === entry.seq && e.approved,
      );
      if (reversal || entry.reversed_by !== undefined) return 'REVERSED';
      return entry.approved ? 'CHARGED' : 'NOT_CHARGED';
    },
    runs: (transaction: { reference?: string }) =>
      zvtEntryOf(entries(), transaction.reference) ? 1 : 0,
    close: async () => {
      await hardware.close();
      await close();
    },
  };
}

export const READER_VARIANTS: ReaderVariant[] = [
  {
    name: 'native reader, stream pair',
    protocol: 'native',
    open: async (dir, delayMs, logger) => {
      const stateFile = path.join(dir, 'reader.jsonl');
      const hardware = hardwareFor(
        dir,
        { emulated: { state_file: stateFile, delay_ms: delayMs } },
        logger,
      );
      return {
        hardware,
        truth: ({ id }) => {
          const record = readerRecord(stateFile, id);
          if (!record || record.sequence === 0) return 'NOT_CHARGED';
          if (record.phase === 'COMPLETED')
            return record.result_code === 'SUCCESS' ? 'CHARGED' : 'NOT_CHARGED';
          if (record.phase === 'CANCELLED')
            return record.result_code === 'REVERSED' ? 'REVERSED' : 'NOT_CHARGED';
          return 'UNKNOWN';
        },
        runs: ({ id }) => readerRuns(stateFile, id).length,
        close: () => hardware.close(),
      };
    },
  },
  {
    name: 'ZVT terminal, stream pair (serial framing)',
    protocol: 'zvt',
    open: async (dir, delayMs, logger) => {
      const memoryFile = path.join(dir, 'zvt-terminal.jsonl');
      const hardware = hardwareFor(
        dir,
        { protocol: 'zvt', emulated: { state_file: memoryFile, delay_ms: delayMs } },
        logger,
      );
      return zvtReader(memoryFile, hardware, async () => undefined);
    },
  },
  {
    name: 'ZVT terminal, pty (serial framing)',
    protocol: 'zvt',
    open: async (dir, delayMs, logger) => {
      const memoryFile = path.join(dir, 'zvt-terminal.jsonl');
      const pty = await openPty();
      const terminal = new ZvtTerminalEmulator({
        memory: new FileTerminalMemory(memoryFile),
        delayMs,
      });
      serveSerial(terminal, pty.stream);
      const hardware = hardwareFor(
        dir,
        { protocol: 'zvt', port: pty.path, baud_rate: 115_200 },
        logger,
      );
      return zvtReader(memoryFile, hardware, async () => {
        await terminal.close();
        await pty.close();
      });
    },
  },
  {
    name: 'ZVT terminal, TCP',
    protocol: 'zvt',
    open: async (dir, delayMs, logger) => {
      const memoryFile = path.join(dir, 'zvt-terminal.jsonl');
      const terminal = new ZvtTerminalEmulator({
        memory: new FileTerminalMemory(memoryFile),
        delayMs,
      });
      const listener = await listenTcp(terminal, { port: 0 });
      const hardware = hardwareFor(
        dir,
        { protocol: 'zvt', tcp: `127.0.0.1:${listener.port}` },
        logger,
      );
      return zvtReader(memoryFile, hardware, async () => {
        await listener.close();
        await terminal.close();
      });
    },
  },
];
