/**
 * The relay's data directory holds what must stay the relay user's alone: the SQLite
 * store (webhook secrets, the event-token key, card tokens, credential hashes) and the
 * hosted simulators' journals. It is made 0700 and the store's files 0600 whatever the
 * umask (SQLite gives its WAL and shared-memory files the store file's mode), and a start
 * warns about any of them left wider, which the relay does not change behind the
 * operator's back.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';

/** The store's files in the data directory (cloud/store/open.ts, data-dir-lock.ts). */
const STORE_FILES = ['relay.sqlite', 'relay.sqlite-wal', 'relay.sqlite-shm'];
const LOCK_FILE = 'relay.lock';

const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

/** Creates what is missing with owner-only modes; warns about what is wider. */
export function prepareDataDir(
  dataDir: string,
  logger: Logger,
  options: { sqlite: boolean },
): void {
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const wider: string[] = [];
  if (fs.statSync(dataDir).mode & 0o077) wider.push(dataDir);
  if (options.sqlite) {
    for (const name of [STORE_FILES[0]!, LOCK_FILE]) {
      // Created empty (an empty file is an empty SQLite database) so that it gets 0600.
      fs.closeSync(fs.openSync(path.join(dataDir, name), 'a', 0o600));
    }
    for (const name of STORE_FILES) {
      const file = path.join(dataDir, name);
      if (fs.existsSync(file) && fs.statSync(file).mode & 0o077) wider.push(file);
    }
  }
  for (const file of wider) {
    logger.warn(
      { path: file, mode: octal(fs.statSync(file).mode) },
      `${file} is readable by others: its mode is wider than ${file === dataDir ? '0700' : '0600'} (chmod it: it holds secrets and card tokens)`,
    );
  }
}
