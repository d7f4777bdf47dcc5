/**
 * The whole path with the real relay: a POS over HTTP, the relay's embedded broker, this
 * agent, the emulated card reader over the serial protocol. The terminal is registered
 * through /terminal/create, as `tps terminal create` does.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { emulatedReader, type EmulatedReader } from '../agent/emulated-reader.js';
import { TerminalCreateResponse } from '../protocol/api.js';
import { NATIVE_READER_CAPABILITIES } from '../protocol/reader-capabilities.js';
import { agentConfig } from './agent-harness.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

describe('agent behind the real relay', () => {
  let relay: TestRelay;
  let agent: RunningAgent;
  let emulated: EmulatedReader;
  let pos: (operation: string, body: Record<string, unknown>) => ReturnType<typeof post>;

  beforeAll(async () => {
    relay = await startTestRelay();
    const created = await post(
      relay.baseUrl,
      'v1',
      '/terminal/create',
      { battery: true },
      relay.account,
    );
    expect(created.status).toBe(200);
    const terminal = TerminalCreateResponse.parse(created.body);
    emulated = emulatedReader({ delayMs: 20, battery: { percentage: 55 } });
    agent = await startAgent(
      agentConfig({
        terminal_id: terminal.terminal_id,
        broker: {
          url: terminal.agent.broker_url,
          username: terminal.agent.username,
          password: terminal.agent.password,
        },
      }),
      { reader: emulated.reader, logger: pino({ level: 'silent' }) },
    );
    const credential = { username: terminal.username, password: terminal.password };
    pos = (operation, body) =>
      post(
        relay.baseUrl,
        'v1',
        operation,
        { terminal_id: terminal.terminal_id, ...body },
        credential,
      );
    for (let i = 0; i < 200; i++) {
      const status = await pos('/terminal/status', {});
      if (status.body?.status?.connected && status.body.status.battery_percentage === 55) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
  afterAll(async () => {
    await agent?.stop();
    await emulated?.close();
    await relay?.close();
  });

  it('shows the terminal connected, with the reader battery', async () => {
    const status = await pos('/terminal/status', {});
    expect(status.body.status).toMatchObject({
      connected: true,
      battery_percentage: 55,
      transaction_state: 'READY',
    });
  });

  it("keeps what the agent says its reader can do (the native reader's all)", async () => {
    const terminalId = (await pos('/terminal/status', {})).body.status.terminal_id as string;
    for (let i = 0; i < 200; i++) {
      if ((await relay.store.getTerminal(terminalId))?.capabilities.reader) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect((await relay.store.getTerminal(terminalId))?.capabilities.reader).toEqual(
      NATIVE_READER_CAPABILITIES,
    );
  });

  it('pays: purchase, result from the reader, confirm', async () => {
    const created = await pos('/transaction/purchase', {
      external_id: 'agent-order-1',
      requested_amount: 2500,
      currency: 'EUR',
      wait_seconds: 10,
    });
    expect(created.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 2500,
    });
    const confirmed = await pos('/transaction/confirm', {
      external_id: 'agent-order-1',
      result_code: 'SUCCESS',
    });
    expect(confirmed.body.transaction.state).toBe('CONFIRMED');
  });

  it('pauses and continues with a new amount', async () => {
    const created = await pos('/transaction/purchase', {
      external_id: 'agent-order-2',
      requested_amount: 1000,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
      wait_seconds: 10,
    });
    expect(created.body.transaction.state).toBe('AWAITING_CONTINUE');
    const continued = await pos('/transaction/continue', {
      external_id: 'agent-order-2',
      requested_amount: 1300,
      wait_seconds: 10,
    });
    expect(continued.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 1300,
    });
  });

  it('confirming a success as failed makes the reader reverse it', async () => {
    const created = await pos('/transaction/purchase', {
      external_id: 'agent-order-3',
      requested_amount: 700,
      currency: 'EUR',
      wait_seconds: 10,
    });
    const id = created.body.transaction.id as string;
    await pos('/transaction/confirm', { external_id: 'agent-order-3', result_code: 'SUCCESS' });
    const failed = await pos('/transaction/confirm', {
      external_id: 'agent-order-3',
      result_code: 'ABORTED',
    });
    expect(failed.body.transaction.state).toBe('COMMITTED');
    for (let i = 0; i < 200 && emulated.firmware.memory.get(id)?.result_code !== 'REVERSED'; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(emulated.firmware.memory.get(id)).toMatchObject({
      phase: 'CANCELLED',
      result_code: 'REVERSED',
    });
  });
});
