/**
 * The relay's store, asynchronous so that SQLite and PostgreSQL fit behind it alike.
 * Every money-state change goes through `changeTransaction`, which runs a synchronous
 * decision against a consistent snapshot and writes its result atomically, together
 * with the commands it sends to the terminal. A resolved promise means committed.
 * Data only: how relays sharing a store hear of each other's changes is the change bus
 * (cluster/change-bus.ts), which of them runs the background work the leadership lock
 * (cluster/leadership-lock.ts); store/open.ts opens the three together.
 *
 * It is made of ports that each say one thing (ports/): accounts and credentials,
 * settings, terminals and their reports, transactions and commands, events and webhooks,
 * the fleet (pairings, releases, configuration, fleet reports, rollouts). A write whose
 * rule spans ports (a claim creates a terminal and its event) is one method, of the port
 * whose rule it is, and commits across them in one transaction; its comment says so.
 * Each port has its conformance suite (testing/<port>-conformance.ts), run against both.
 */
import type { AccountStore } from './ports/accounts.js';
import type { EventStore } from './ports/events.js';
import type { FleetStore } from './ports/fleet.js';
import type { SettingsStore } from './ports/settings.js';
import type { TerminalStore } from './ports/terminals.js';
import type { TransactionStore } from './ports/transactions.js';

export type { ChangeKey } from './ports/transactions.js';
export type {
  AccountStore,
  EventStore,
  FleetStore,
  SettingsStore,
  TerminalStore,
  TransactionStore,
};

export interface Store
  extends AccountStore, SettingsStore, TerminalStore, TransactionStore, EventStore, FleetStore {
  close(): Promise<void>;
}
