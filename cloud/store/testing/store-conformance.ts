/**
 * The behaviour every Store must show: one conformance suite per port, each run by every
 * implementation's test file with its own factory: SQLite (../sqlite.test.ts), PostgreSQL
 * (../postgres/postgres.test.ts) alike.
 *
 *   AccountStore      accounts-conformance.ts
 *   SettingsStore     settings-conformance.ts
 *   TerminalStore     terminals-conformance.ts
 *   TransactionStore  transactions-conformance.ts
 *   EventStore        events-conformance.ts
 *   FleetStore        fleet-conformance.ts
 *
 * A suite's cases across processes (a second handle on the same data, peer-fixtures.ts)
 * run when the factory can open one.
 */
import { describe } from 'vitest';
import { accountsConformance } from './accounts-conformance.js';
import { eventsConformance } from './events-conformance.js';
import { fleetConformance } from './fleet-conformance.js';
import { settingsConformance } from './settings-conformance.js';
import { terminalsConformance } from './terminals-conformance.js';
import { transactionsConformance } from './transactions-conformance.js';
import type { StoreFactory } from './store-fixtures.js';

export type { StoreFactory } from './store-fixtures.js';
export { terminalRecord, transactionRecord } from './store-fixtures.js';

/** Every port's suite, by the port it checks. */
export const PORT_SUITES = {
  accounts: accountsConformance,
  settings: settingsConformance,
  terminals: terminalsConformance,
  transactions: transactionsConformance,
  events: eventsConformance,
  fleet: fleetConformance,
} satisfies Record<string, (factory: StoreFactory) => void>;

export function storeConformance(name: string, factory: StoreFactory): void {
  describe(`${name} store conformance`, () => {
    for (const suite of Object.values(PORT_SUITES)) suite(factory);
  });
}
