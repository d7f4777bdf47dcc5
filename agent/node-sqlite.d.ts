/**
 * The part of Node's `node:sqlite` (Node.js 22.13 and later, no flag) the journal uses. The
 * project's @types/node (20.x) does not declare the module yet; this goes once it does.
 */
declare module 'node:sqlite' {
  type SqliteValue = null | number | bigint | string | Uint8Array;
  interface RunResult {
    changes: number | bigint;
    lastInsertRowid: number | bigint;
  }
  export class StatementSync {
    run(...params: Array<SqliteValue | Record<string, SqliteValue>>): RunResult;
    get(...params: Array<SqliteValue | Record<string, SqliteValue>>): unknown;
    all(...params: Array<SqliteValue | Record<string, SqliteValue>>): unknown[];
  }
  export class DatabaseSync {
    constructor(path: string, options?: { readOnly?: boolean; timeout?: number; open?: boolean });
    readonly isOpen: boolean;
    readonly isTransaction: boolean;
    exec(sql: string): void;
    prepare(sql: string): StatementSync;
    close(): void;
  }
}
