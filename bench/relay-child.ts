/** Starts bench/relay-process.ts as a child with a fresh data directory, and cleans up after it. */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BenchChild } from './child.js';
import type { Credential } from './pos-api.js';

export interface RelayChild {
  process: BenchChild;
  origin: string;
  /** The relay's embedded MQTT broker, where agents connect. */
  brokerUrl: string;
  account: Credential;
  dataDir: string;
  /** Stops the relay and removes its data directory. */
  dispose(): Promise<void>;
}

export interface RelayChildOptions {
  simulatorDelayMs: number;
  /** More TPS_* settings for this relay (webhooks over http, event vendor…). */
  env?: Record<string, string>;
}

/** Made for each run: nothing the bench uses outlives it. */
const ACCOUNT: Credential = {
  username: 'bench-account',
  password: randomBytes(18).toString('base64url'),
};

export async function startRelayChild(options: RelayChildOptions): Promise<RelayChild> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bench-'));
  try {
    const child = await BenchChild.start(new URL('./relay-process.js', import.meta.url), {
      // Lets the bench collect garbage before it reads a baseline RSS.
      execArgv: ['--expose-gc'],
      env: {
        TPS_DATA_DIR: dataDir,
        TPS_SIMULATOR_DELAY_MS: String(options.simulatorDelayMs),
        TPS_ACCOUNT_USERNAME: ACCOUNT.username,
        TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
        // A free port for the embedded broker, whatever the bench's own environment says.
        TPS_MQTT_PORT: '0',
        // Bench agents pay with no reader delay, far faster than any card: not a flood.
        TPS_MQTT_MESSAGES_PER_MINUTE: '1000000',
        ...options.env,
      },
    });
    return {
      process: child,
      origin: child.origin,
      brokerUrl: child.brokerUrl ?? '',
      account: ACCOUNT,
      dataDir,
      async dispose() {
        await child.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}
