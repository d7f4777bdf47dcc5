/**
 * One line of text per frame seen on the line, for the monitor:
 *
 * ```
 *   12:00:01.250  reader→host  DATA #17 SYN  transaction.progress {"transaction_id":"tx-1","screen_text":"Tap card"}
 *   12:00:01.251  host→reader  ACK  #17
 *   12:00:01.300  reader→host  drop bad-crc (41 bytes)
 * ```
 *
 * Strings over 60 characters (receipts) are cut unless `full`; card numbers arrive masked
 * by the reader and are shown as they are.
 */
import type { Frame } from '../serial/codec.js';
import type { DropInfo } from '../serial/decoder.js';
import { HostMessage, ReaderMessage, parseMessage } from '../serial/messages.js';

export type Sender = 'host' | 'reader';

/** Who sent a DATA frame, by its message; undefined when the payload is neither. */
export function senderOf(frame: Frame): Sender | undefined {
  if (frame.type !== 'DATA') return undefined;
  const value = parseJson(frame.payload);
  if (parseMessage(HostMessage, value).ok) return 'host';
  if (parseMessage(ReaderMessage, value).ok) return 'reader';
  return undefined;
}

export function frameText(frame: Frame, full = false): string {
  const head = `${frame.type.padEnd(4)} #${frame.seq}${frame.syn ? ' SYN' : ''}`;
  if (frame.type === 'ACK') return head;
  const value = parseJson(frame.payload);
  if (frame.type === 'NAK') {
    const reason = (value as { reason?: unknown } | undefined)?.reason;
    return `${head}  ${typeof reason === 'string' ? reason : '(no reason)'}`;
  }
  if (typeof value !== 'object' || value === null) {
    return `${head}  (not JSON: ${frame.payload.length} bytes)`;
  }
  const { v: _v, type, ...rest } = value as { v?: unknown; type?: unknown };
  return `${head}  ${String(type)} ${JSON.stringify(rest, (_key, item: unknown) => shorten(item, full))}`;
}

export function dropText(drop: DropInfo): string {
  return `drop ${drop.reason} (${drop.length} bytes)`;
}

/** `HH:MM:SS.mmm`, local time. */
export function clock(date: Date): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

function shorten(item: unknown, full: boolean): unknown {
  if (full || typeof item !== 'string' || item.length <= 60) return item;
  return `${item.slice(0, 40).replaceAll('\n', '⏎')}… (${item.length} chars)`;
}

function parseJson(payload: Buffer): unknown {
  try {
    return JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * One line of a monitor: `HH:MM:SS.mmm  from→to  route  text`, the sender column
 * `whoWidth` wide, or with `json` (`--json`) one object per line, for tools.
 */
export function monitorLine(entry: {
  at: Date;
  from: string | undefined;
  to: string | undefined;
  route: string | undefined;
  text: string;
  json: boolean | undefined;
  whoWidth: number;
}): string {
  if (entry.json) {
    return JSON.stringify({
      at: entry.at.toISOString(),
      from: entry.from ?? 'peer',
      to: entry.to ?? 'peer',
      ...(entry.route ? { route: entry.route } : {}),
      text: entry.text,
    });
  }
  const who = entry.from ? `${entry.from}→${entry.to}` : 'peer';
  return `${clock(entry.at)}  ${who.padEnd(entry.whoWidth)}${entry.route ? `  ${entry.route}` : ''}  ${entry.text}`;
}
