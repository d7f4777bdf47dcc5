/**
 * What the fleet pages share: whose fleet a page shows (the merchant's own, or the account
 * the operator picked), the links between the pages that keep that choice, and how a
 * terminal's configuration state and facts read.
 */
import type { TerminalConfigView, TerminalFacts, TerminalStatus } from '../protocol/index.js';
import { h } from './dom.js';
import { localTime } from './format.js';

/**
 * Whose fleet: a merchant acts for its own account (`accountId` undefined, nothing named);
 * the operator names the account it picked in every call (docs/tenants.md).
 */
export interface FleetScope {
  operator: boolean;
  accountId: string | undefined;
}

/** A fleet page's address, keeping the operator's account: `#/fleet/config?account=…`. */
export function fleetHref(scope: FleetScope, path = '', query: Record<string, string> = {}) {
  const params = new URLSearchParams(query);
  if (scope.accountId) params.set('account', scope.accountId);
  const search = params.toString();
  return `#/fleet${path ? `/${path}` : ''}${search ? `?${search}` : ''}`;
}

/** null and undefined as the facts mean them: not said (yet). */
export const known = (value: string | null | undefined) => value ?? '—';

/** A terminal's name and id, linked to its fleet view. */
export function terminalLink(scope: FleetScope, terminalId: string, name: string | null) {
  return h(
    'a',
    { href: fleetHref(scope, `terminal/${encodeURIComponent(terminalId)}`) },
    name && name !== terminalId ? `${name} (${terminalId})` : terminalId,
  );
}

/** The reader as its agent describes it: protocol and model, then firmware. */
export function readerText(facts: TerminalFacts): string {
  const kind = [facts.reader_protocol, facts.reader_model].filter(Boolean).join(' ');
  return `${kind || '—'}; firmware ${known(facts.reader_firmware)}`;
}

/** Online now, or when it was last seen. */
export function lastSeen(facts: TerminalFacts): HTMLElement {
  return facts.connected
    ? h('span', { class: 'badge online' }, 'online')
    : h(
        'span',
        {},
        h('span', { class: 'badge offline' }, 'offline'),
        facts.last_seen ? [' last seen ', localTime(facts.last_seen)] : ' never seen',
      );
}

/**
 * The configuration in force against the desired one (docs/fleet.md, "Configuration"): in
 * sync, pending (a payment runs), refused with the agent's reason, or not reported yet.
 */
export function configState(view: TerminalConfigView | undefined): HTMLElement {
  if (!view) return h('span', {}, '—');
  if (view.in_sync) return h('span', { class: 'badge online' }, 'in sync');
  const reported = view.reported;
  if (!reported || reported.version !== view.desired.version) {
    return h('span', { class: 'badge pending' }, 'pending: not reported yet');
  }
  if (reported.status === 'REJECTED') {
    return h(
      'span',
      {},
      h('span', { class: 'badge offline' }, 'refused'),
      ` ${reported.reason ?? 'no reason given'}`,
    );
  }
  return h('span', { class: 'badge pending' }, 'pending: waits until no payment runs');
}

/**
 * Local mode as the terminal's status tells it (docs/local-mode.md): whether its agent
 * reaches the relay, and the payments it made alone that wait to be forwarded.
 */
export function localModeText(status: TerminalStatus | undefined): string {
  if (!status) return '—';
  const waiting = status.local_pending_count ?? 0;
  const forwarded =
    waiting > 0
      ? `${waiting} to forward (${((status.local_pending_total ?? 0) / 100).toFixed(2)})`
      : 'nothing to forward';
  if (status.relay_reachable === false) return `relay out of reach; ${forwarded}`;
  if (status.relay_reachable === undefined && waiting === 0) return '—';
  return forwarded;
}
