/**
 * The emulated PT's non-volatile memory: its journal of transactions, from which it takes
 * the receipt and trace numbers, the last transaction (Repeat Receipt), the payments a
 * reversal may undo and the totals of an end-of-day. Every entry is written before the ECR
 * hears of it, so after a crash the PT says what it did.
 *
 * `FileTerminalMemory` keeps it in a JSON Lines file, like the card reader's
 * file-reader-memory.ts: each put() appends a line and fsyncs it; the last line of an
 * entry wins; a torn last line is ignored, any other bad line stops the load (a PT that
 * forgets a payment is worse than one that does not start); compacted on open.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

export const JournalEntry = z.object({
  /** 1, 2, …: order of the entries; receipt and trace numbers derive from it. */
  seq: z.number().int().min(1),
  kind: z.enum(['PAYMENT', 'REFUND', 'REVERSAL', 'END_OF_DAY']),
  /** IN_PROGRESS until the outcome is decided; an entry found so at start-up was interrupted. */
  phase: z.enum(['IN_PROGRESS', 'DONE']),
  receipt_number: z.number().int().min(1).max(9999),
  trace_number: z.number().int().min(1).max(999_999),
  /** The end-of-day batch the entry belongs to (an END_OF_DAY entry closes its batch). */
  batch: z.number().int().min(1),
  amount: z.number().int().min(0),
  /** ISO 4217 numeric. */
  currency: z.number().int().min(0).max(999),
  /** ZVT result code (BMP 27); absent while IN_PROGRESS. */
  result_code: z.number().int().min(0).max(255).optional(),
  /** Money moved: an approved payment, refund or reversal. */
  approved: z.boolean(),
  /** Card scheme of the totals group (scenarios.ts names: VISA, MASTERCARD, …). */
  scheme: z.string().max(32).optional(),
  /** For a reversal: the seq of the payment it undoes. */
  reverses: z.number().int().min(1).optional(),
  /** For a payment: the seq of the reversal that undid it. */
  reversed_by: z.number().int().min(1).optional(),
  /** The 04 0F sent, as hex, to send again on Repeat Receipt. */
  status_information: z
    .string()
    .regex(/^(?:[0-9a-f]{2})*$/)
    .optional(),
  /** The receipts printed, each a list of lines (merchant copy, then customer copy). */
  receipts: z.array(z.array(z.string().max(64)).max(100)).max(4),
  /** ISO 8601 time of the write. */
  at: z.string(),
});
export type JournalEntry = z.infer<typeof JournalEntry>;

export interface TerminalMemory {
  /** Every entry, by seq. */
  all(): JournalEntry[];
  get(seq: number): JournalEntry | undefined;
  /** The entry with the highest seq. */
  last(): JournalEntry | undefined;
  /** Stores the entry, replacing the one with its seq; durable on return. */
  put(entry: JournalEntry): void;
  close(): void;
}

/** Entries kept: the oldest are forgotten past it (a real PT's journal is finite too). */
export const DEFAULT_MAX_ENTRIES = 10_000;

export class InMemoryTerminalMemory implements TerminalMemory {
  protected readonly entries = new Map<number, JournalEntry>();

  constructor(protected readonly maxEntries = DEFAULT_MAX_ENTRIES) {}

  all(): JournalEntry[] {
    return [...this.entries.values()].sort((a, b) => a.seq - b.seq);
  }

  get(seq: number): JournalEntry | undefined {
    return this.entries.get(seq);
  }

  last(): JournalEntry | undefined {
    let last: JournalEntry | undefined;
    for (const entry of this.entries.values()) if (!last || entry.seq > last.seq) last = entry;
    return last;
  }

  put(entry: JournalEntry): void {
    this.remember(entry);
  }

  close(): void {}

  protected remember(entry: JournalEntry): void {
    this.entries.set(entry.seq, entry);
    if (this.entries.size <= this.maxEntries) return;
    const oldest = Math.min(...this.entries.keys());
    this.entries.delete(oldest);
  }
}

export const TERMINAL_MEMORY_HEADER = { format: 'tps-zvt-terminal-memory', version: 1 } as const;

export class FileTerminalMemory extends InMemoryTerminalMemory {
  private fd: number;
  private lines = 0;

  constructor(
    readonly file: string,
    maxEntries = DEFAULT_MAX_ENTRIES,
  ) {
    super(maxEntries);
    mkdirSync(path.dirname(file), { recursive: true });
    if (existsSync(file)) for (const entry of parseTerminalMemory(file)) this.remember(entry);
    this.fd = this.compact();
  }

  override put(entry: JournalEntry): void {
    writeSync(this.fd, `${JSON.stringify(entry)}\n`);
    fsyncSync(this.fd);
    this.lines++;
    this.remember(entry);
    if (this.lines > 2 * this.entries.size + 64) this.fd = this.compact();
  }

  override close(): void {
    closeSync(this.fd);
  }

  private compact(): number {
    const temp = `${this.file}.tmp`;
    const body = [TERMINAL_MEMORY_HEADER, ...this.all()]
      .map((line) => `${JSON.stringify(line)}\n`)
      .join('');
    const tempFd = openSync(temp, 'w');
    try {
      writeSync(tempFd, body);
      fsyncSync(tempFd);
    } finally {
      closeSync(tempFd);
    }
    renameSync(temp, this.file);
    syncDirectory(path.dirname(this.file));
    if (this.fd !== undefined) closeSync(this.fd);
    this.lines = this.entries.size;
    return openSync(this.file, 'a');
  }
}

/** The entries of a memory file in write order; throws on anything but a torn last line. */
export function parseTerminalMemory(file: string): JournalEntry[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  lines.pop(); // after the last newline: an unfinished write, or nothing
  if (lines.length === 0) return [];
  const header = safeJson(lines[0] ?? '') as { format?: unknown; version?: unknown } | undefined;
  if (
    header?.format !== TERMINAL_MEMORY_HEADER.format ||
    header.version !== TERMINAL_MEMORY_HEADER.version
  ) {
    throw new Error(
      `${file} is not a ZVT terminal memory file (expected ${JSON.stringify(TERMINAL_MEMORY_HEADER)})`,
    );
  }
  return lines.slice(1).map((line, index) => {
    const parsed = JournalEntry.safeParse(safeJson(line));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(
        `${file}:${index + 2}: not a journal entry (${issue?.path.join('.') || 'line'}: ${issue?.message}); ` +
          'the terminal will not start on a journal it cannot trust',
      );
    }
    return parsed.data;
  });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function syncDirectory(directory: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(directory, 'r');
    fsyncSync(fd);
  } catch {
    // Windows cannot open a directory; its renames are durable enough for an emulator.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
