/**
 * A ZVT agent's fleet facts on a real broker (aedes): the terminal's software version, read
 * by the driver in a status enquiry, reaches the retained `facts` message as its firmware.
 */
import mqtt from 'mqtt';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { AgentConfigSchema } from '../agent/config.js';
import { openHardware, type Hardware } from '../agent/hardware.js';
import { FactsMessage } from '../protocol/fleet-diagnostics.js';
import { terminalTopics } from '../protocol/mqtt.js';
import { startAedes, tempDir, type TestBroker } from './agent-harness.js';

const silent = pino({ level: 'silent' });
const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

describe("a ZVT agent's fleet facts", () => {
  it('say the terminal software version as the reader firmware', async () => {
    const broker: TestBroker = await startAedes();
    stops.push(() => broker.stop());
    const dir = tempDir('zvt-facts');
    const terminalId = 't-1000000042';
    const config = AgentConfigSchema.parse({
      terminal_id: terminalId,
      broker: { url: broker.url, username: terminalId, password: 'x' },
      reader: {
        protocol: 'zvt',
        emulated: { state_file: `${dir}/terminal.jsonl`, delay_ms: 0 },
      },
      printer: { type: 'none' },
      data_dir: dir,
      log_level: 'silent',
    });
    const hardware: Hardware = openHardware(config, silent);
    stops.push(() => hardware.close());
    const seen: FactsMessage[] = [];
    const relay = await mqtt.connectAsync(broker.url, { clientId: 'test-relay' });
    stops.push(() => relay.endAsync());
    relay.on('message', (_topic, payload) =>
      seen.push(FactsMessage.parse(JSON.parse(payload.toString()))),
    );
    await relay.subscribeAsync(terminalTopics(terminalId).facts, { qos: 1 });

    const agent: RunningAgent = await startAgent(config, {
      reader: hardware.reader,
      readerCapabilities: hardware.capabilities,
      logger: silent,
      fleet: { reader: hardware.facts() },
    });
    stops.push(() => agent.stop());
    hardware.onFactsChanged(() => agent.readerFacts(hardware.facts()));
    await hardware.reader.status();

    const deadline = Date.now() + 5000;
    while (!seen.some((f) => f.reader.firmware) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(seen.at(-1)?.reader).toEqual({
      protocol: 'zvt',
      model: 'emulated ZVT terminal (generic profile)',
      firmware: 'TPS-ZVT-EMULATOR-1.0',
    });
  });
});
