/**
 * Store conformance: the fleet. A terminal keeps the name and cohort it was claimed with;
 * a layer of desired configuration is replaced whole; what an agent says of itself is
 * kept per kind, the newest replacing the one before, and only for a known terminal.
 */
import { expect, it } from 'vitest';
import type { ConfigLayerRecord } from '../records.js';
import { NOW, terminalRecord, withTerminal, type StoreFactory } from './store-fixtures.js';

const LATER = '2026-11-21T12:05:00.000Z';

const layer = (over: Partial<ConfigLayerRecord> = {}): ConfigLayerRecord => ({
  accountId: 'acct-1',
  scope: 'cohort',
  scopeId: 'cohort-north',
  config: { heartbeat_s: 60, reader: { baud_rate: 9600 } },
  updatedAt: NOW,
  ...over,
});

export function fleetCases(factory: StoreFactory): void {
  it('keeps a terminal’s name and cohort', async () => {
    const store = await withTerminal(factory);
    await store.createTerminal({ ...terminalRecord('t-2'), name: 'Till 2', cohort: 'cohort-n' });
    expect(await store.getTerminal('t-2')).toMatchObject({ name: 'Till 2', cohort: 'cohort-n' });
    const plain = await store.getTerminal('t-1');
    expect(plain).not.toHaveProperty('name');
    expect(plain).not.toHaveProperty('cohort');
    expect((await store.listTerminals()).find((t) => t.id === 't-2')?.cohort).toBe('cohort-n');
    await store.close();
  });

  it('replaces a layer of desired configuration whole, each scope on its own', async () => {
    const store = await withTerminal(factory);
    await store.putConfigLayer(layer());
    await store.putConfigLayer(
      layer({ scope: 'account', scopeId: '', config: { log_level: 'warn' } }),
    );
    expect(await store.getConfigLayer('acct-1', 'cohort', 'cohort-north')).toEqual(layer());
    await store.putConfigLayer(
      layer({ config: { idle_screen_text: 'Welcome' }, updatedAt: LATER }),
    );
    expect(await store.getConfigLayer('acct-1', 'cohort', 'cohort-north')).toEqual(
      layer({ config: { idle_screen_text: 'Welcome' }, updatedAt: LATER }),
    );
    expect((await store.getConfigLayer('acct-1', 'account', ''))?.config).toEqual({
      log_level: 'warn',
    });
    expect(await store.getConfigLayer('acct-1', 'cohort', 'cohort-south')).toBeUndefined();
    expect(await store.getConfigLayer('acct-2', 'cohort', 'cohort-north')).toBeUndefined();
    await store.close();
  });

  it('keeps the newest report of each kind from a known terminal only', async () => {
    const store = await withTerminal(factory);
    const report = (kind: 'config' | 'facts', body: unknown, receivedAt = NOW) => ({
      terminalId: 't-1',
      kind,
      body,
      receivedAt,
    });
    await store.putFleetReport(report('config', { version: 'a', status: 'PENDING' }));
    await store.putFleetReport(report('facts', { agent_version: '1.0.0' }));
    await store.putFleetReport(report('config', { version: 'a', status: 'APPLIED' }, LATER));
    await store.putFleetReport({ ...report('config', {}), terminalId: 't-unknown' });
    expect(await store.fleetReports('t-1')).toEqual([
      report('config', { version: 'a', status: 'APPLIED' }, LATER),
      report('facts', { agent_version: '1.0.0' }),
    ]);
    expect(await store.fleetReports('t-unknown')).toEqual([]);
    await store.close();
  });
}
