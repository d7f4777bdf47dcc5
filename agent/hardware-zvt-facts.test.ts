import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentConfigSchema } from './config.js';
import { openHardware, type Hardware } from './hardware.js';

let hardware: Hardware | undefined;
let dir: string | undefined;
afterEach(async () => {
  await hardware?.close();
  hardware = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a ZVT terminal's facts", () => {
  it('keep the software version the terminal says in a status enquiry, for the fleet', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'tps-zvt-facts-'));
    const config = AgentConfigSchema.parse({
      terminal_id: 't-1000000001',
      broker: { url: 'mqtt://127.0.0.1:1', username: 'u', password: 'p' },
      reader: {
        protocol: 'zvt',
        profile: 'generic',
        emulated: { state_file: path.join(dir, 'terminal.jsonl'), delay_ms: 0 },
      },
      printer: { type: 'none' },
      data_dir: dir,
    });
    hardware = openHardware(config, pino({ level: 'silent' }));
    let told = 0;
    hardware.onFactsChanged(() => told++);
    // Unknown until the terminal said it.
    expect(hardware.facts()).toEqual({ model: 'emulated ZVT terminal (generic profile)' });

    await hardware.reader.status();
    expect(hardware.facts()).toEqual({
      model: 'emulated ZVT terminal (generic profile)',
      firmware: 'TPS-ZVT-EMULATOR-1.0',
    });
    expect(told).toBe(1);
    // The same version again is nothing new.
    await hardware.reader.status();
    expect(told).toBe(1);
  });
});
