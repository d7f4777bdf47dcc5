/** How the relay names itself on the broker. */
import { randomBytes } from 'node:crypto';
import type { Store } from '../store/store.js';

/** Agents' traffic is shared among the relays of one store through this group. */
export const SHARE_GROUP = 'tps-relay';

/**
 * The relay's MQTT client id. Alone on a broker, it is stable across restarts (kept with
 * the data), so the broker keeps its session; relays sharing a store also share agent
 * traffic in clean sessions, and each process needs an id of its own.
 */
export async function relayClientId(store: Store, shared: boolean): Promise<string> {
  const stored = await store.claimSetting('relay_instance_id', randomBytes(6).toString('hex'));
  return shared ? `tps-relay-${stored}-${randomBytes(4).toString('hex')}` : `tps-relay-${stored}`;
}
