/**
 * Housekeeping on a shared external broker (Mosquitto at MQTT_URL): the relay and the
 * agents connect with persistent sessions (clean: false) and the agents leave a retained
 * presence message. A test removes what it left, so the machine's broker does not keep
 * queueing messages for clients that will never come back.
 */
import mqtt from 'mqtt';
import { terminalTopics } from '../../protocol/index.js';

export async function forgetOnBroker(
  url: string,
  leftovers: { clientIds: string[]; terminalIds: string[] },
): Promise<void> {
  // Connecting with clean: true under a client id discards that id's stored session.
  for (const clientId of leftovers.clientIds) {
    try {
      const client = await mqtt.connectAsync(url, {
        clientId,
        clean: true,
        protocolVersion: 4,
        reconnectPeriod: 0,
        connectTimeout: 3000,
      });
      await client.endAsync();
    } catch {
      // Best effort: the broker may refuse the id, or be gone.
    }
  }
  if (leftovers.terminalIds.length === 0) return;
  try {
    const client = await mqtt.connectAsync(url, {
      clean: true,
      protocolVersion: 4,
      reconnectPeriod: 0,
      connectTimeout: 3000,
    });
    // An empty retained message deletes the retained one.
    for (const terminalId of leftovers.terminalIds) {
      await client.publishAsync(terminalTopics(terminalId).presence, '', { qos: 1, retain: true });
    }
    await client.endAsync();
  } catch {
    // Best effort.
  }
}
