/**
 * A terminal's reader capabilities, from the agent's presence to the POS: the relay
 * refuses a create the terminal's card reader cannot carry out (a ZVT terminal cannot pause
 * at customer identification) with 400 UNSUPPORTED_BY_TERMINAL, and takes an agent that
 * does not say (an older one) for the native reader. The agent here is a bare MQTT client
 * with the terminal's broker credential, the outermost edge: it only says its presence.
 */
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TerminalCreateResponse } from '../protocol/api.js';
import {
  NATIVE_READER_CAPABILITIES,
  agentClientId,
  terminalTopics,
  type PresenceMessage,
  type ReaderCapabilities,
} from '../protocol/index.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

const ZVT_READER: ReaderCapabilities = {
  protocol: 'zvt',
  pause_on_customer_identified: false,
  account_check: false,
  cashback: false,
  refund: true,
  cancel: true,
};

describe("the relay and the terminal's reader capabilities", () => {
  let relay: TestRelay;
  let terminal: TerminalCreateResponse;
  let agent: mqtt.MqttClient;
  let pos: (operation: string, body: Record<string, unknown>) => ReturnType<typeof post>;

  /** Says the presence as an agent does, and waits until the relay has kept it. */
  async function sayPresence(reader: ReaderCapabilities | undefined): Promise<void> {
    const presence: PresenceMessage = {
      connected: true,
      at: new Date().toISOString(),
      agent_version: '0.1.0',
      ...(reader ? { reader } : {}),
    };
    await agent.publishAsync(
      terminalTopics(terminal.terminal_id).presence,
      JSON.stringify(presence),
      { qos: 1, retain: true },
    );
    for (let i = 0; i < 250; i++) {
      const kept = (await relay.store.getTerminal(terminal.terminal_id))?.capabilities.reader;
      if (JSON.stringify(kept) === JSON.stringify(reader)) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error('the relay did not keep the presence');
  }

  beforeAll(async () => {
    relay = await startTestRelay();
    const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account);
    terminal = TerminalCreateResponse.parse(created.body);
    agent = await mqtt.connectAsync(terminal.agent.broker_url, {
      clientId: agentClientId(terminal.terminal_id),
      username: terminal.agent.username,
      password: terminal.agent.password,
      protocolVersion: 4,
      reconnectPeriod: 0,
    });
    const credential = { username: terminal.username, password: terminal.password };
    pos = (operation, body) =>
      post(
        relay.baseUrl,
        'v1',
        operation,
        { terminal_id: terminal.terminal_id, currency: 'EUR', wait_seconds: 0, ...body },
        credential,
      );
  });
  afterAll(async () => {
    await agent?.endAsync();
    await relay?.close();
  });

  it('refuses what a ZVT terminal cannot do with 400 UNSUPPORTED_BY_TERMINAL, and nothing else', async () => {
    await sayPresence(ZVT_READER);
    const paused = await pos('/transaction/purchase', {
      external_id: 'zvt-pause',
      requested_amount: 1000,
      options: { on_customer_identified: { pause: true } },
    });
    expect(paused.status).toBe(400);
    expect(paused.body).toEqual({
      error: {
        code: 'UNSUPPORTED_BY_TERMINAL',
        description: "the terminal's card reader (zvt) cannot pause at customer identification",
      },
    });
    const cashback = await pos('/transaction/purchase', {
      external_id: 'zvt-cashback',
      requested_amount: 1000,
      cashback_amount: 200,
    });
    expect(cashback.status).toBe(400);
    expect(cashback.body.error.code).toBe('UNSUPPORTED_BY_TERMINAL');
    // Nothing was made of the refused requests.
    const unknown = await pos('/transaction/get', { external_id: 'zvt-pause' });
    expect(unknown.status).toBe(404);

    // What the terminal can do goes through: no pause asked, no cashback.
    const plain = await pos('/transaction/purchase', {
      external_id: 'zvt-plain',
      requested_amount: 1000,
      options: { on_customer_identified: { pause: false } },
      cashback_amount: 0,
    });
    expect(plain.status).toBe(200);
    expect(plain.body.transaction.state).toBe('PROCESSING');
    const failed = await pos('/transaction/confirm', {
      external_id: 'zvt-plain',
      result_code: 'ABORTED',
    });
    expect(failed.status).toBe(200);
  });

  it('takes an agent that does not say what its reader can do for the native reader', async () => {
    await sayPresence(ZVT_READER);
    await sayPresence(undefined);
    const paused = await pos('/transaction/purchase', {
      external_id: 'native-pause',
      requested_amount: 1000,
      options: { on_customer_identified: { pause: true } },
    });
    expect(paused.status).toBe(200);
    expect(paused.body.transaction.state).toBe('PROCESSING');
  });

  it('follows the reader the agent reports now, e.g. after it is reconfigured', async () => {
    await sayPresence({ ...NATIVE_READER_CAPABILITIES, cashback: false });
    const cashback = await pos('/transaction/purchase', {
      external_id: 'native-cashback',
      requested_amount: 1000,
      cashback_amount: 100,
    });
    expect(cashback.status).toBe(400);
    expect(cashback.body.error.description).toBe(
      "the terminal's card reader (native) cannot pay out cashback",
    );
  });
});
