import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FileTerminalMemory,
  TERMINAL_MEMORY_HEADER,
  type JournalEntry,
} from './terminal-memory.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'zvt-memory-'));
  dirs.push(dir);
  return path.join(dir, 'journal.jsonl');
}

const entry = (seq: number, extra: Partial<JournalEntry> = {}): JournalEntry => ({
  seq,
  kind: 'PAYMENT',
  phase: 'DONE',
  receipt_number: seq,
  trace_number: seq,
  batch: 1,
  amount: 100 * seq,
  currency: 978,
  result_code: 0,
  approved: true,
  receipts: [['LINE']],
  at: '2024-06-07T10:00:00.000Z',
  ...extra,
});

describe('FileTerminalMemory', () => {
  it('keeps entries across reopening; the last line of an entry wins', () => {
    const file = tempFile();
    const memory = new FileTerminalMemory(file);
    memory.put(entry(1, { phase: 'IN_PROGRESS' }));
    memory.put(entry(1));
    memory.put(entry(2));
    memory.close();
    const reopened = new FileTerminalMemory(file);
    expect(reopened.all()).toEqual([entry(1), entry(2)]);
    expect(reopened.last()).toEqual(entry(2));
    reopened.close();
    // Compacted on open: the header and one line per entry.
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(3);
  });

  it('ignores a torn last line (power cut mid-write) and refuses any other bad line', () => {
    const file = tempFile();
    const memory = new FileTerminalMemory(file);
    memory.put(entry(1));
    memory.close();
    appendFileSync(file, '{"seq":2,"kind":"PAY');
    const reopened = new FileTerminalMemory(file);
    expect(reopened.all()).toEqual([entry(1)]);
    reopened.close();
    writeFileSync(file, `${JSON.stringify(TERMINAL_MEMORY_HEADER)}\n{"seq":"x"}\n`);
    expect(() => new FileTerminalMemory(file)).toThrow(/journal\.jsonl:2: not a journal entry/);
    writeFileSync(file, '{"format":"something-else"}\n');
    expect(() => new FileTerminalMemory(file)).toThrow(/not a ZVT terminal memory file/);
  });
});
