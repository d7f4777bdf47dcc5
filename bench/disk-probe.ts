/**
 * How long one durable commit takes on the disk the relays use (os.tmpdir(), so
 * TMPDIR moves both): single-row SQLite commits in WAL mode with synchronous=FULL, as
 * the relay's store runs them. This machine's disk flush varies with other work on it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { LatencyRecorder, type LatencySummary } from './stats.js';

export interface DiskProbe {
  dir: string;
  commit: LatencySummary;
}

export function probeDisk(commits = 300): DiskProbe {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bench-disk-'));
  try {
    const db = new Database(path.join(dir, 'probe.sqlite'));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
    const insert = db.prepare('INSERT INTO t (body) VALUES (?)');
    const commit = db.transaction((body: string) => insert.run(body));
    const body = 'x'.repeat(1000);
    const latency = new LatencyRecorder();
    for (let i = 0; i < commits; i++) {
      const started = performance.now();
      commit.immediate(body);
      latency.record(performance.now() - started);
    }
    db.close();
    return { dir: os.tmpdir(), commit: latency.summary() };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
