/**
 * How the rollout pages show a rollout (docs/fleet.md, "Rollouts"): its state, its wave,
 * each ordered terminal's outcome with the agent's reason, and the addresses that keep the
 * operator's choice of account (`#/rollouts?account=acct-…`).
 */
import type { RolloutTerminalView, RolloutView } from '../protocol/index.js';
import { h } from './dom.js';

/** A rollout has at most three waves: one terminal, the share, the rest. */
export const WAVES = 3;

/** The rollouts' list, or one rollout's page (`id`), for the operator's account if any. */
export function rolloutsHref(accountId?: string, id?: string): string {
  const path = id ? `#/rollouts/${encodeURIComponent(id)}` : '#/rollouts';
  return accountId ? `${path}?account=${encodeURIComponent(accountId)}` : path;
}

const STATE_BADGE: Record<string, string> = {
  running: 'pending',
  paused: 'offline',
  completed: 'online',
  superseded: 'unknown',
};

export function rolloutState(rollout: RolloutView): HTMLElement {
  return h('span', { class: `badge ${STATE_BADGE[rollout.state] ?? 'unknown'}` }, rollout.state);
}

/** "1.4.2 (linux-x64)" */
export const releaseText = (rollout: RolloutView) => `${rollout.version} (${rollout.arch})`;

/** "2 of 3 ordered installed", as tps fleet rollout status counts them. */
export function installedText(rollout: RolloutView): string {
  const installed = rollout.terminals.filter((t) => t.result === 'installed').length;
  return `${installed} of ${rollout.terminals.length} ordered installed`;
}

/**
 * A terminal's outcome: installed, or how it failed with the agent's reason (set as text),
 * or pending while its agent has not said.
 */
export function outcome(terminal: RolloutTerminalView): HTMLElement {
  if (terminal.result === undefined) return h('span', { class: 'badge pending' }, 'pending');
  if (terminal.result === 'installed') return h('span', { class: 'badge online' }, 'installed');
  return h(
    'span',
    {},
    h('span', { class: 'badge offline' }, terminal.result),
    terminal.reason ? ` ${terminal.reason}` : '',
  );
}
