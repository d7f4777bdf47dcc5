/**
 * The behaviour every Store must show, as one suite that each implementation's test
 * file runs with its own factory: SQLite (../sqlite.test.ts), PostgreSQL
 * (../postgres/postgres.test.ts) alike. Its cases are in store-conformance-*.ts.
 */
import { describe } from 'vitest';
import { changeCases } from './store-conformance-changes.js';
import { fleetCases } from './store-conformance-fleet.js';
import { pairingCases } from './store-conformance-pairings.js';
import { peerCases } from './store-conformance-peers.js';
import { recordCases } from './store-conformance-records.js';
import { releaseCases } from './store-conformance-releases.js';
import { rolloutCases } from './store-conformance-rollouts.js';
import type { StoreFactory } from './store-fixtures.js';

export type { StoreFactory } from './store-fixtures.js';
export { terminalRecord, transactionRecord } from './store-fixtures.js';

export function storeConformance(name: string, factory: StoreFactory): void {
  describe(`${name} store conformance`, () => {
    changeCases(factory);
    recordCases(factory);
    pairingCases(factory);
    releaseCases(factory);
    fleetCases(factory);
    rolloutCases(factory);
    if (factory.peer) {
      const peer = factory.peer;
      describe('across processes (a second handle on the same data)', () => {
        peerCases(factory, peer);
      });
    }
  });
}
