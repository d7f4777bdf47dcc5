/**
 * Which part of the process a log line comes from, as one key: `"part":"simulator/agent/link"`.
 * pino appends a child's bindings to its parent's, so binding `part` at each level wrote
 * the key once per level (`"part":"simulator",…,"part":"agent","part":"link"`), which log
 * tools read as one value. The path lives on the logger instead and the root logger's
 * mixin writes it once; children made with a plain `child()` inherit it.
 */
import type { Bindings, Logger } from 'pino';

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
