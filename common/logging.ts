/**
 * Which part of the process a log line comes from, as one key: `"part":"simulator/agent/link"`.
 * pino appends a child's bindings to its parent's, so binding `part` at each level wrote
 * the key once per level (`"part":"simulator",…,"part":"agent","part":"link"`), which log
 * tools read as one value. The path lives on the logger instead and the root logger's
 * mixin writes it once; children made with a plain `child()` inherit it.
 */
import { createRequire } from 'node:module';
import type { Bindings, DestinationStream, Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
import { z } from 'zod';

const PART = Symbol('tps.logPart');
type WithPart = Logger & { [PART]?: string };

/** A child logger for the part `name` below its parent's: its lines say `part: "parent/name"`. */
export function partLogger(parent: Logger, name: string, bindings: Bindings = {}): Logger {
  const above = (parent as WithPart)[PART];
  const child = parent.child(bindings) as WithPart;
  child[PART] = above ? `${above}/${name}` : name;
  return child;
}

/** The root logger's `mixin` (pino option): adds the logger's part path to each line. */
export function partMixin(_line: object, _level: number, logger: Logger): { part?: string } {
  const part = (logger as WithPart)[PART];
  return part ? { part } : {};
}

/**
 * How log lines are written: JSON lines for machines (journald, log shippers), readable
 * lines for a person at a terminal. `auto`: readable when the output is a terminal.
 */
export const LogFormat = z.enum(['auto', 'json', 'pretty']);
export type LogFormat = z.infer<typeof LogFormat>;

/**
 * Where a root logger writes: undefined for pino's own JSON on standard output, else a
 * pino-pretty stream. Redaction (pino's streamWrite hook) runs before either.
 */
export function logDestination(
  format: LogFormat,
  output: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout,
): DestinationStream | undefined {
  const readable = format === 'pretty' || (format === 'auto' && output.isTTY === true);
  if (!readable) return output === process.stdout ? undefined : (output as DestinationStream);
  // Loaded only when asked for: a relay or agent logging JSON never carries it (≈ 5 MB).
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return pretty({
    destination: output,
    sync: true,
    colorize: output.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,name,part',
    messageFormat: '{if part}[{part}] {end}{msg}',
  });
}
