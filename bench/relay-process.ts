/**
 * The relay under test, alone in its own process so that its memory is its own: a fresh
 * data directory, port 0, logs at warn. Configured by the bench through TPS_* variables
 * (read by loadCloudConfig); reports its origin, its MQTT broker's address (where agents
 * connect) and its parked long polls over IPC.
 */
import { loadCloudConfig } from '../cloud/config.js';
import { startRelay } from '../cloud/relay.js';
import { failStart, send, serveParent } from './child-side.js';

async function main(): Promise<void> {
  const config = loadCloudConfig(
    {},
    // The relay alone, with simulated terminals inside it, unless a phase asks otherwise.
    { TPS_SIMULATOR_MODE: 'in-process', ...process.env },
    { host: '127.0.0.1', port: 0, mqttPort: 0, defaultSimulator: false, logLevel: 'warn' },
  );
  const relay = await startRelay(config);
  serveParent({ parked: () => relay.service.feed.size, stop: () => relay.close() });
  send({ type: 'ready', origin: new URL(relay.baseUrl).origin, brokerUrl: relay.brokerUrl });
}

main().catch(failStart);
