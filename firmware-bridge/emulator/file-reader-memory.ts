/**
 * The emulated reader's memory in a JSON Lines file, for an emulator in its own process:
 * it outlives a crash of the agent and a restart of the emulator.
 *
 * ```
 *   {"format":"tps-card-reader-memory","version":1}                          header
 *   {"transaction_id":"tx-1","sequence":1,"start":{...},"phase":"IN_PROGRESS",...}
 *   {"transaction_id":"tx-1","sequence":1,"start":{...},"phase":"COMPLETED","result_code":"SUCCESS",...}
 * ```
 *
 * Each put() appends one line and fsyncs it before returning (unless made with `fsync:
 * false`: the line then outlives a crash of the process, not of the machine; the relay's
 * hosted simulators, docs/simulator.md); a transaction's last line
 * wins. A torn last line (the power cut mid-write) is ignored; any other bad line stops the
 * load, since forgetting a charge is worse than a reader that does not start. The file is
 * compacted (written to FILE.tmp, fsynced, renamed over FILE) on open and whenever it holds
 * more than twice as many lines as live records. One emulator per file.
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
import {
  DEFAULT_MAX_RECORDS,
  InMemoryReaderMemory,
  ReaderRecord,
  type ReaderMemory,
} from './reader-memory.js';

export const MEMORY_FILE_HEADER = { format: 'tps-card-reader-memory', version: 1 } as const;

export class FileReaderMemory extends InMemoryReaderMemory implements ReaderMemory {
  private fd: number;
  private lines = 0;
  private readonly fsync: boolean;

  /** Opens (or creates) the file and loads its records. */
  constructor(
    readonly file: string,
    maxRecords = DEFAULT_MAX_RECORDS,
    options: { fsync?: boolean } = {},
  ) {
    super(maxRecords);
    this.fsync = options.fsync ?? true;
    mkdirSync(path.dirname(file), { recursive: true });
    if (existsSync(file)) for (const record of parseMemoryFile(file)) this.remember(record);
    this.fd = this.compact();
  }

  override put(record: ReaderRecord): void {
    writeSync(this.fd, `${JSON.stringify(record)}\n`);
    if (this.fsync) fsyncSync(this.fd);
    this.lines++;
    this.remember(record);
    if (this.lines > 2 * this.records.size + 64) this.fd = this.compact();
  }

  override close(): void {
    closeSync(this.fd);
  }

  /** Rewrites the file with the live records only; returns the new file's descriptor. */
  private compact(): number {
    const temp = `${this.file}.tmp`;
    const body = [MEMORY_FILE_HEADER, ...this.records.values()]
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
    this.lines = this.records.size;
    return openSync(this.file, 'a');
  }
}

/** The records of a memory file in write order; throws on anything but a torn last line. */
export function parseMemoryFile(file: string): ReaderRecord[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  // The text after the last newline is an unfinished write (or nothing): never a record.
  lines.pop();
  if (lines.length === 0) return [];
  const header = safeJson(lines[0] ?? '');
  const { format, version } = (header ?? {}) as { format?: unknown; version?: unknown };
  if (format !== MEMORY_FILE_HEADER.format || version !== MEMORY_FILE_HEADER.version) {
    throw new Error(
      `${file} is not a card-reader memory file (expected the header ${JSON.stringify(MEMORY_FILE_HEADER)})`,
    );
  }
  return lines.slice(1).map((line, index) => {
    const parsed = ReaderRecord.safeParse(safeJson(line));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(
        `${file}:${index + 2}: not a reader record (${issue?.path.join('.') || 'line'}: ${issue?.message}); ` +
          'the reader will not start on a memory it cannot trust',
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

/** Makes a rename durable (POSIX); not possible, nor needed, on every platform. */
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
