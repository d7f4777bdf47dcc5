/**
 * Simulated terminals with a ZVT reader (`POST /simulator/create {"reader_protocol": "zvt"}`,
 * an extension): the relay runs the agent with the ZVT driver against the emulated ZVT
 * terminal, so relay → MQTT → agent → ZVT driver → emulated terminal serves the same API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatorCreateResponse } from '../protocol/api.js';
import { eventually, posFor } from './support/e2e-parts.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

describe('simulated terminals with a ZVT reader', () => {
  let relay: TestRelay;

  beforeAll(async () => {
    relay = await startTestRelay();
  });
  afterAll(async () => {
    await relay?.close();
  });

  it('serve the API through the ZVT driver and the emulated ZVT terminal', async () => {
    const created = await post(
      relay.baseUrl,
      'v1',
      '/simulator/create',
      { reader_protocol: 'zvt' },
      relay.account,
    );
    expect(created.status).toBe(200);
    const simulator = SimulatorCreateResponse.parse(created.body);
    const pos = posFor(() => relay.baseUrl, simulator);
    const paid = await eventually(
      () =>
        pos('/transaction/purchase', {
          external_id: 'zvt-sim-1',
          requested_amount: 1250,
          currency: 'EUR',
          wait_seconds: 5,
        }),
      (r) => r.status !== 200 || r.body.transaction.state !== 'PROCESSING',
      { ms: 20_000, what: 'the purchase to finish' },
    );
    expect(paid.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 1250,
    });
    // The ZVT driver's reference: terminal id, receipt and trace number.
    expect(paid.body.transaction.reference).toMatch(/^\d{8}-\d{4}-\d{6}$/);
    expect(relay.simulators.outcomes(simulator.terminal_id).get(paid.body.transaction.id)).toBe(
      'CHARGED',
    );
    const paused = await pos('/transaction/purchase', {
      external_id: 'zvt-sim-2',
      requested_amount: 1000,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
    });
    expect(paused.status).toBe(400);
    expect(paused.body.error.code).toBe('UNSUPPORTED_BY_TERMINAL');
  });

  it('refuses a reader protocol it does not know, naming the field', async () => {
    const created = await post(
      relay.baseUrl,
      'v1',
      '/simulator/create',
      { reader_protocol: 'usb' },
      relay.account,
    );
    expect(created.status).toBe(400);
    expect(created.body.error.code).toBe('INVALID_REQUEST');
    expect(created.body.error.description).toMatch(/^reader_protocol: /);
  });

  it('without it, a simulated terminal is the native one, pause and all', async () => {
    const simulator = await relay.newSimulator();
    const pos = posFor(() => relay.baseUrl, simulator);
    const paused = await pos('/transaction/purchase', {
      external_id: 'native-sim-1',
      requested_amount: 1000,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
      wait_seconds: 5,
    });
    expect(paused.body.transaction.state).toBe('AWAITING_CONTINUE');
  });
});

describe('a relay whose simulated terminals run in process', () => {
  it('answers a ZVT simulator with 400, as it cannot run one', async () => {
    const relay = await startTestRelay({ simulatorMode: 'in-process' });
    try {
      const created = await post(
        relay.baseUrl,
        'v1',
        '/simulator/create',
        { reader_protocol: 'zvt' },
        relay.account,
      );
      expect(created.status).toBe(400);
      expect(created.body.error).toMatchObject({ code: 'INVALID_REQUEST' });
      expect(created.body.error.description).toMatch(/TPS_SIMULATOR_MODE=agent/);
    } finally {
      await relay.close();
    }
  });
});
