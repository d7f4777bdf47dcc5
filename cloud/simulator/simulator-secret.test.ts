import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { verifyAgentSecret } from '../accounts/mosquitto-hash.js';
import { systemClock } from '../../common/clock.js';
import { SqliteStore } from '../store/sqlite.js';
import { TerminalRegistry } from '../terminals/registry.js';
import { SimulatorSecrets } from './simulator-secret.js';

describe('a hosted simulator’s agent secret', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-simulator-secret-'));
  const stores: SqliteStore[] = [];
  let file = 0;
  const open = () => {
    const store = new SqliteStore(path.join(dir, `relay-${file}.sqlite`));
    stores.push(store);
    return store;
  };
  /** A simulated terminal as /simulator/create registers it. */
  async function simulator(store: SqliteStore): Promise<string> {
    await store.createAccount({
      id: 'acct-secret-test',
      kind: 'merchant',
      createdAt: new Date().toISOString(),
    });
    const registry = new TerminalRegistry(store, systemClock);
    return (await registry.createSimulator('acct-secret-test')).terminal.id;
  }
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()));
    file++;
  });

  it('is the same for every relay on the store, whose stored hash then stays as it was', async () => {
    const now = new Date();
    const id = await simulator(open());
    const other = await simulator(stores[0]!);
    const first = await new SimulatorSecrets(stores[0]!).issue(id, now);
    const store = stores[0]!;
    const hash = await store.findAgentCredential(id);
    expect(await verifyAgentSecret(first, hash!)).toBe(true);
    await store.close();
    stores.length = 0;

    // Another relay (or the same after a restart): same secret, the broker's hash unchanged.
    const again = await new SimulatorSecrets(open()).issue(id, now);
    expect(again).toBe(first);
    expect(await stores[0]!.findAgentCredential(id)).toBe(hash);
    // Another terminal gets another secret.
    expect(await new SimulatorSecrets(stores[0]!).issue(other, now)).not.toBe(first);
  });

  it('replaces a stored credential it does not match (one a relay issued at random before)', async () => {
    const store = open();
    const id = await simulator(store);
    await store.putAgentCredential(id, '$7$101$bm90IGEgc2FsdA==$AAAA', new Date().toISOString());
    const secret = await new SimulatorSecrets(store).issue(id, new Date());
    expect(await verifyAgentSecret(secret, (await store.findAgentCredential(id))!)).toBe(true);
  });
});
