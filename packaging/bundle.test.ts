/**
 * What the agent's bundle holds: mqtt.js's client, but not its WebSocket and SOCKS
 * transports, which the agent never uses and which an idle agent would keep in memory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleAgent } from './bundle.js';
import { ROOT } from './package-agent.js';

describe("the agent's bundle", () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bundle-'));
  afterAll(() => fs.rmSync(work, { recursive: true, force: true }));

  it("holds mqtt.js's client without its ws and socks transports", async () => {
    const outfile = path.join(work, 'tps-agent.js');
    const { inputs } = await bundleAgent(ROOT, outfile);
    expect(inputs).toContain('node_modules/mqtt/build/lib/client.js');
    const packages = new Set(
      inputs.map((input) => /^node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input)?.[1]),
    );
    for (const left of ['ws', 'socks', 'ip-address', 'smart-buffer']) {
      expect(packages.has(left), left).toBe(false);
    }
    expect(fs.readFileSync(outfile, 'utf8')).toContain("ws is not in the agent's bundle");
  }, 120_000);
});
