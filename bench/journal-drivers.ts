/**
 * `npx tsx bench/journal-drivers.ts [commits]`: the agent journal's write speed on Node's
 * node:sqlite (what the journal uses) beside better-sqlite3 (what it used, and the relay
 * still uses), on the same file system, WAL and synchronous=FULL, one commit per write as
 * the journal makes them: a transaction's row upserted and a report added.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import Database from 'better-sqlite3';
import { Journal } from '../agent/journal.js';

const commits = Number(process.argv[2] ?? 500);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-journal-bench-'));
const report = {
  type: 'transaction' as const,
  transaction_id: 'x',
  phase: 'COMPLETED',
  at: new Date(0).toISOString(),
};

function timeIt(name: string, write: (i: number) => void): void {
  const started = process.hrtime.bigint();
  for (let i = 0; i < commits; i++) write(i);
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  process.stdout.write(
    `${name.padEnd(34)} ${commits} commits  ${(ms / commits).toFixed(3)} ms/commit  ${Math.round((commits * 1000) / ms)} commits/s\n`,
  );
}

const SCHEMA = `CREATE TABLE IF NOT EXISTS t (id TEXT PRIMARY KEY, state TEXT, updated_at TEXT);
  CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT)`;

// The journal itself, on node:sqlite.
const journal = Journal.open(path.join(dir, 'journal'));
timeIt('Journal.record (node:sqlite)', (i) =>
  journal.record({
    transaction: {
      transaction_id: `t-${i}`,
      state: 'COMPLETED',
      cancel_requested: false,
      continue_requested: false,
      created_at: report.at,
      updated_at: report.at,
    },
    reports: [report as never],
  }),
);
journal.close();

// The same two statements per commit on each driver.
const native = new DatabaseSync(path.join(dir, 'node-sqlite.sqlite'));
native.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;');
native.exec(SCHEMA);
const nUpsert = native.prepare('INSERT OR REPLACE INTO t VALUES (?, ?, ?)');
const nReport = native.prepare('INSERT INTO outbox (body) VALUES (?)');
timeIt('node:sqlite, upsert + insert', (i) => {
  native.exec('BEGIN');
  nUpsert.run(`t-${i}`, 'COMPLETED', report.at);
  nReport.run(JSON.stringify(report));
  native.exec('COMMIT');
});
native.close();

const better = new Database(path.join(dir, 'better-sqlite3.sqlite'));
better.pragma('journal_mode = WAL');
better.pragma('synchronous = FULL');
better.exec(SCHEMA);
const bUpsert = better.prepare('INSERT OR REPLACE INTO t VALUES (?, ?, ?)');
const bReport = better.prepare('INSERT INTO outbox (body) VALUES (?)');
const bCommit = better.transaction((i: number) => {
  bUpsert.run(`t-${i}`, 'COMPLETED', report.at);
  bReport.run(JSON.stringify(report));
});
timeIt('better-sqlite3, upsert + insert', (i) => bCommit(i));
better.close();

fs.rmSync(dir, { recursive: true, force: true });
