/** What `tps pos` reads: its flags, the connection settings and the output it writes. */
import { readFileSync } from 'node:fs';
import type { parseArgs } from 'node:util';
import { z } from 'zod';
import { UsageError } from '../common/cli.js';
import { Amount, TerminalId, localDnsName } from '../protocol/index.js';
import { printable, printableJson } from '../common/terminal-text.js';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080/pos';
export const DEFAULT_JOURNAL = './.tps/pos-journal.sqlite';

export const OPTIONS = {
  'base-url': { type: 'string' },
  username: { type: 'string' },
  password: { type: 'string' },
  terminal: { type: 'string' },
  journal: { type: 'string' },
  revision: { type: 'string' },
  local: { type: 'string' },
  'local-ca': { type: 'string' },
  'local-first': { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  amount: { type: 'string' },
  currency: { type: 'string' },
  cashback: { type: 'string' },
  'external-id': { type: 'string' },
  original: { type: 'string' },
  'original-terminal': { type: 'string' },
  'customer-not-present': { type: 'boolean' },
  'result-code': { type: 'string' },
  description: { type: 'string' },
  'captured-amount': { type: 'string' },
  'extra-amounts': { type: 'boolean' },
  follow: { type: 'boolean' },
  type: { type: 'string' },
  limit: { type: 'string' },
  adopt: { type: 'boolean' },
  'abort-unknown': { type: 'boolean' },
  out: { type: 'string' },
} as const;

export type Values = ReturnType<
  typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>
>['values'];

type Setting =
  | 'baseUrl'
  | 'username'
  | 'password'
  | 'terminalId'
  | 'journal'
  | 'revision'
  | 'localUrl'
  | 'localCa';

/** Where each connection setting comes from: a flag, else an environment variable. */
const SOURCES: Record<Setting, { flag: keyof typeof OPTIONS; env?: string }> = {
  baseUrl: { flag: 'base-url', env: 'TPS_BASE_URL' },
  username: { flag: 'username', env: 'TPS_USERNAME' },
  password: { flag: 'password', env: 'TPS_PASSWORD' },
  terminalId: { flag: 'terminal', env: 'TPS_TERMINAL_ID' },
  journal: { flag: 'journal', env: 'TPS_JOURNAL' },
  revision: { flag: 'revision' },
  localUrl: { flag: 'local', env: 'TPS_LOCAL_URL' },
  localCa: { flag: 'local-ca', env: 'TPS_LOCAL_CA' },
};
const SETTINGS = Object.keys(SOURCES) as Setting[];

const required = (what: string, setting: Setting) => {
  const { flag, env } = SOURCES[setting];
  return `${what} is needed (--${flag}${env ? ` or ${env}` : ''})`;
};

const ConnectionSchema = z.object({
  baseUrl: z
    .url({ error: 'must be a URL such as http://127.0.0.1:8080/pos' })
    .default(DEFAULT_BASE_URL),
  username: z.string({ error: required('a username', 'username') }).min(1),
  password: z.string({ error: required('a password', 'password') }).min(1),
  terminalId: TerminalId.optional().refine((v) => v !== undefined, {
    message: required('a terminal id', 'terminalId'),
  }),
  journal: z.string().min(1).default(DEFAULT_JOURNAL),
  revision: z.enum(['v0', 'v1'], { error: 'must be v0 or v1' }).default('v1'),
  localUrl: z.url({ error: 'must be a URL such as https://192.168.1.20:8443/pos' }).optional(),
  localCa: z.string().min(1).optional(),
});
export type Connection = z.infer<typeof ConnectionSchema> & {
  terminalId: string;
  /** Whether the local path is tried first (`--local-first`). */
  localFirst: boolean;
};

/** How a problem names each setting: `--terminal / TPS_TERMINAL_ID`. */
const SETTING_NAMES: Record<string, string> = Object.fromEntries(
  SETTINGS.map((setting) => {
    const { flag, env } = SOURCES[setting];
    return [setting, `--${flag}${env ? ` / ${env}` : ''}`];
  }),
);

const fromEnv = (name: string) => {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : value;
};

export function connection(values: Values): Connection {
  const input = Object.fromEntries(
    SETTINGS.map((setting) => {
      const { flag, env } = SOURCES[setting];
      return [setting, values[flag] ?? (env ? fromEnv(env) : undefined)];
    }),
  );
  const parsed = ConnectionSchema.safeParse(input);
  if (!parsed.success) throw new UsageError(describe(parsed.error, SETTING_NAMES));
  const localFirst = values['local-first'] === true;
  if (parsed.data.localUrl === undefined && (localFirst || parsed.data.localCa !== undefined)) {
    throw new UsageError(
      `${localFirst ? '--local-first' : SETTING_NAMES.localCa}: needs the terminal's local address (${SETTING_NAMES.localUrl})`,
    );
  }
  return { ...parsed.data, localFirst } as Connection;
}

/**
 * The client's local path from the connection settings: the agent's address, the
 * certificates to trust for it (a PEM file, as `tps pos local-trust` saves it) and which
 * path goes first.
 */
export function localPath(
  conn: Connection,
): { baseUrl: string; ca?: string; serverName: string; prefer: 'cloud' | 'local' } | undefined {
  if (conn.localUrl === undefined) return undefined;
  let ca: string | undefined;
  if (conn.localCa !== undefined) {
    try {
      ca = readFileSync(conn.localCa, 'utf8');
    } catch (error) {
      throw new UsageError(
        `${SETTING_NAMES.localCa}: cannot read ${conn.localCa}: ${(error as Error).message}`,
      );
    }
  }
  return {
    baseUrl: conn.localUrl,
    ...(ca !== undefined ? { ca } : {}),
    serverName: localDnsName(conn.terminalId),
    prefer: conn.localFirst ? 'local' : 'cloud',
  };
}

function describe(error: z.ZodError, names: Record<string, string>): string {
  return error.issues
    .map((issue) => {
      const key = String(issue.path[0] ?? '');
      return `${names[key] ?? key}: ${issue.message}`;
    })
    .join('\n');
}

/** Parses the flags one command needs, naming every wrong one. */
export function flags<S extends z.ZodRawShape>(
  shape: S,
  input: Record<string, unknown>,
): z.infer<z.ZodObject<S>> {
  const parsed = z.object(shape).safeParse(input);
  if (!parsed.success) {
    throw new UsageError(
      describe(parsed.error, Object.fromEntries(Object.keys(shape).map((k) => [k, `--${k}`]))),
    );
  }
  return parsed.data;
}

/** A flag holding an amount: digits only, in minor units, within the API's limit. */
export const amount = () =>
  z
    .string({ error: 'is needed' })
    .regex(/^\d+$/, 'must be an integer in minor units (1000 is 10.00)')
    .transform(Number)
    .pipe(Amount);

export type Out = { say(line: string): void; note(line: string): void; json(value: unknown): void };

/**
 * Where `tps pos` writes. Receipts, result descriptions and screen messages come from the
 * terminal, so control characters in them are shown as escapes, never obeyed by the
 * person's terminal (docs/security.md, "Fleet text on the operator's terminal").
 */
export function output(jsonMode: boolean): Out {
  return {
    say: (line) => {
      if (!jsonMode) process.stdout.write(`${printable(line, { multiline: true })}\n`);
    },
    note: (line) => process.stderr.write(`${printable(line, { multiline: true })}\n`),
    json: (value) => {
      if (jsonMode) process.stdout.write(`${printableJson(value)}\n`);
    },
  };
}

/** Runs every check, so that one run names every mistake, not only the first. */
export function checked<A, B>(first: () => A, second: () => B): [A, B] {
  const problems: string[] = [];
  const attempt = <T>(check: () => T): T | undefined => {
    try {
      return check();
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      problems.push(error.message);
      return undefined;
    }
  };
  const a = attempt(first);
  const b = attempt(second);
  if (problems.length > 0) throw new UsageError(problems.join('\n'));
  return [a as A, b as B];
}
