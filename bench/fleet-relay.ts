/**
 * The fleet phase's relay: bench/relay-process.ts in a child, on a data directory that
 * outlives one process, so that the phase can restart it (SIGTERM, then a new process on
 * the same store and the same broker port, where the agents reconnect).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BenchChild } from './child.js';
import type { Credential } from './pos-api.js';

export interface FleetRelay {
  process: BenchChild;
  origin: string;
  brokerUrl: string;
}

export class FleetRelays {
  readonly dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bench-fleet-relay-'));
  readonly account: Credential = {
    username: 'bench-account',
    password: randomBytes(18).toString('base64url'),
  };
  private mqttPort = 0;

  /** `env`: more TPS_* settings (an external broker, PostgreSQL). */
  constructor(
    private readonly agents: number,
    private readonly env: Record<string, string> = {},
  ) {}

  /** Starts a relay on the data directory; the broker's port stays the first one's. */
  async start(): Promise<FleetRelay> {
    const child = await BenchChild.start(new URL('./relay-process.js', import.meta.url), {
      execArgv: ['--expose-gc'],
      env: {
        TPS_DATA_DIR: this.dataDir,
        TPS_ACCOUNT_USERNAME: this.account.username,
        TPS_ACCOUNT_PASSWORD: this.account.password,
        TPS_MQTT_PORT: String(this.mqttPort),
        // Room for every agent and the sockets of a restart still closing: the default
        // (10,000) is one relay's documented limit, which the phase may go up to.
        TPS_MQTT_MAX_CONNECTIONS: String(Math.ceil(this.agents * 1.2) + 100),
        // Heartbeats at a short period and a storm's re-sends are no flood.
        TPS_MQTT_MESSAGES_PER_MINUTE: '1000000',
        ...this.env,
      },
    });
    const brokerUrl = child.brokerUrl ?? '';
    if (!this.env.TPS_MQTT_URL) this.mqttPort = Number(new URL(brokerUrl).port);
    return { process: child, origin: child.origin, brokerUrl };
  }

  dispose(): void {
    fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}
