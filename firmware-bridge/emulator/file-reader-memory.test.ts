import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileReaderMemory, MEMORY_FILE_HEADER } from './file-reader-memory.js';
import { InMemoryReaderMemory, type ReaderMemory, type ReaderRecord } from './reader-memory.js';

const file = () =>
  path.join(mkdtempSync(path.join(tmpdir(), 'tps-memory-')), 'sub', 'reader.jsonl');

const record = (id: string, sequence: number, over: Partial<ReaderRecord> = {}): ReaderRecord => ({
  transaction_id: id,
  sequence,
  phase: 'IN_PROGRESS',
  updated_at: '2025-01-01T00:00:00.000Z',
  ...over,
});

const lines = (name: string) => readFileSync(name, 'utf8').trimEnd().split('\n');

describe.each([
  ['in memory', () => new InMemoryReaderMemory(3)],
  ['in a file', () => new FileReaderMemory(file(), 3)],
] as const)('reader memory %s', (_name, make: () => ReaderMemory) => {
  it('keeps the newest record per transaction, and the started one with the highest sequence as last', () => {
    const memory = make();
    memory.put(record('a', 1));
    memory.put(record('a', 1, { phase: 'COMPLETED', result_code: 'SUCCESS' }));
    memory.put(record('ghost', 0, { phase: 'CANCELLED', result_code: 'ABORTED' }));
    expect(memory.get('a')).toMatchObject({ phase: 'COMPLETED' });
    expect(memory.last()?.transaction_id).toBe('a');
    memory.put(record('b', 2));
    expect(memory.last()?.transaction_id).toBe('b');
    memory.close();
  });

  it('forgets the oldest records past its limit, never the last transaction', () => {
    const memory = make();
    memory.put(record('a', 1));
    for (const id of ['x', 'y', 'z'])
      memory.put(record(id, 0, { phase: 'CANCELLED', result_code: 'ABORTED' }));
    expect(memory.get('a')).toBeDefined();
    expect(memory.get('x')).toBeUndefined();
    expect(memory.all().map((r) => r.transaction_id)).toEqual(['a', 'y', 'z']);
    memory.close();
  });
});

describe('FileReaderMemory', () => {
  it('reloads what it wrote, one JSON line per write after a header', () => {
    const name = file();
    const memory = new FileReaderMemory(name);
    memory.put(record('a', 1));
    memory.put(record('a', 1, { phase: 'COMPLETED', result_code: 'SUCCESS' }));
    memory.close();
    expect(JSON.parse(lines(name)[0] as string)).toEqual(MEMORY_FILE_HEADER);
    expect(lines(name)).toHaveLength(3);
    const reopened = new FileReaderMemory(name);
    expect(reopened.get('a')).toMatchObject({ phase: 'COMPLETED', result_code: 'SUCCESS' });
    expect(lines(name)).toHaveLength(2); // compacted on open
    reopened.close();
  });

  it('ignores a torn last line (power cut mid-write)', () => {
    const name = file();
    const memory = new FileReaderMemory(name);
    memory.put(record('a', 1));
    memory.close();
    appendFileSync(name, '{"transaction_id":"a","sequence":1,"pha');
    const reopened = new FileReaderMemory(name);
    expect(reopened.get('a')).toMatchObject({ phase: 'IN_PROGRESS' });
    expect(readFileSync(name, 'utf8').endsWith('\n')).toBe(true);
    reopened.close();
  });

  it('refuses a file with a bad line inside, or another format', () => {
    const name = file();
    new FileReaderMemory(name).close();
    appendFileSync(name, '{"transaction_id":"a"}\n{"nonsense":true}\n');
    expect(() => new FileReaderMemory(name)).toThrow(/reader\.jsonl:2: not a reader record/);
    writeFileSync(name, '{"hello":1}\n');
    expect(() => new FileReaderMemory(name)).toThrow(/is not a card-reader memory file/);
  });

  it('compacts itself: the file does not grow with rewrites of the same records', () => {
    const name = file();
    const memory = new FileReaderMemory(name);
    for (let i = 0; i < 500; i++) memory.put(record(`t${i % 5}`, 1 + (i % 5)));
    expect(lines(name).length).toBeLessThan(100);
    memory.close();
    expect(new FileReaderMemory(name).all()).toHaveLength(5);
  });
});
