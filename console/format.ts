/** How the console shows the resources: status badges, receipt paper, field tables. */
import type { TerminalStatus, Transaction } from '../protocol/index.js';
import { h } from './dom.js';

/** `reachable`: whether the console reaches the relay; if not, no terminal is known online. */
export function statusBadge(connected: boolean | undefined, reachable = true): HTMLElement {
  if (!reachable) {
    return h(
      'span',
      {
        class: 'badge unknown',
        title: 'the console has lost the relay; shown again once it is back',
      },
      'unknown',
    );
  }
  const label = connected === undefined ? 'unknown' : connected ? 'online' : 'offline';
  return h('span', { class: `badge ${label}` }, label);
}

export function stateBadge(state: string | undefined): HTMLElement {
  return h('span', { class: `badge state-${(state ?? 'none').toLowerCase()}` }, state ?? '—');
}

export function battery(status: TerminalStatus): string {
  if (status.battery_percentage === undefined) return '—';
  return `${status.battery_percentage} %${status.battery_charging ? ' (charging)' : ''}`;
}

export function yesNo(value: boolean | undefined): string {
  return value === undefined ? '—' : value ? 'yes' : 'no';
}

export function receiptPaper(title: string, text: string | undefined): HTMLElement | null {
  if (!text) return null;
  return h(
    'figure',
    { class: 'receipt' },
    h('figcaption', {}, title),
    h('pre', { class: 'paper', tabindex: 0, 'aria-label': title }, text),
  );
}

/** Every field of a transaction, nested objects flattened as a.b. */
export function fieldTable(txn: Transaction): HTMLElement {
  const rows: Array<[string, string]> = [];
  const walk = (prefix: string, value: unknown) => {
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      for (const [key, inner] of Object.entries(value)) {
        if (key.startsWith('receipt_details')) continue;
        walk(prefix ? `${prefix}.${key}` : key, inner);
      }
    } else rows.push([prefix, typeof value === 'string' ? value : JSON.stringify(value)]);
  };
  walk('', txn);
  return h(
    'table',
    { class: 'fields' },
    h('caption', {}, 'Fields'),
    h(
      'tbody',
      {},
      rows.map(([name, value]) => h('tr', {}, h('th', { scope: 'row' }, name), h('td', {}, value))),
    ),
  );
}

/**
 * A time as the person at the screen reads it: local date and time to the second, as the
 * "Created since" picker takes it, in a <time> that keeps the exact UTC instant (its
 * datetime, and its title on hover).
 */
export function localTime(iso: string | undefined): HTMLElement | string {
  if (!iso) return '—';
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const two = (n: number) => String(n).padStart(2, '0');
  const text =
    `${at.getFullYear()}-${two(at.getMonth() + 1)}-${two(at.getDate())} ` +
    `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}`;
  return h('time', { datetime: iso, title: iso }, text);
}
