/**
 * The relay killed with SIGKILL at arbitrary moments while POS clients run payments,
 * and started again on the same data directory: no answered create is lost, nothing is
 * left stuck, nothing is doubled.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { post, tempDataDir, type ApiResponse } from './support/relay.js';
import { startRelayProcess, type RelayProcess } from './support/relay-process.js';

const ACCOUNT = { username: 'crash-account', password: 'crash-account-password' };
const TERMINALS = 6;
const KILLS = 4;

describe('relay killed with SIGKILL mid-payment', () => {
  const dataDir = tempDataDir();
  const env = {
    TPS_DATA_DIR: dataDir,
    TPS_ACCOUNT_USERNAME: ACCOUNT.username,
    TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
    TPS_SIMULATOR_DELAY_MS: '60',
    TPS_DEFAULT_SIMULATOR: 'false',
  };
  let relay: RelayProcess | undefined;
  afterAll(async () => {
    await relay?.kill();
  });

  it('loses no answered transaction and leaves none stuck', async () => {
    relay = await startRelayProcess(env);
    const sims: Array<{ terminal_id: string; username: string; password: string }> = [];
    for (let i = 0; i < TERMINALS; i++) {
      const res = await post(relay.baseUrl, 'v1', '/simulator/create', {}, ACCOUNT);
      sims.push(res.body as { terminal_id: string; username: string; password: string });
    }

    /** What the POS clients saw: external ids sent, creates answered, confirms answered. */
    const sent = new Map<string, string>();
    const answered = new Map<string, string>();
    const confirmed = new Set<string>();
    let running = true;

    const call = async (op: string, body: object, sim: (typeof sims)[number]) => {
      for (;;) {
        try {
          const res: ApiResponse = await post(relay!.baseUrl, 'v1', op, body, sim);
          if (res.status === 200) return res;
          throw new Error(`${op} answered ${res.status}: ${JSON.stringify(res.body)}`);
        } catch (error) {
          if (error instanceof Error && error.message.includes('answered')) throw error;
          await new Promise((resolve) => setTimeout(resolve, 20)); // relay down: try again
        }
      }
    };

    // Each POS follows the spec's client flow: store the id, repeat the create until it
    // leaves PROCESSING, then confirm until the confirm is answered.
    const pos = async (sim: (typeof sims)[number]) => {
      for (let n = 0; running; n++) {
        const externalId = `${sim.terminal_id}-${n}`;
        sent.set(externalId, sim.terminal_id);
        const body = { terminal_id: sim.terminal_id, external_id: externalId, currency: 'EUR' };
        let res = await call(
          '/transaction/purchase',
          { ...body, requested_amount: 1000 + n, wait_seconds: 1 },
          sim,
        );
        answered.set(externalId, res.body.transaction.id);
        const deadline = Date.now() + 20_000;
        while (res.body.transaction.state === 'PROCESSING') {
          if (Date.now() > deadline) throw new Error(`${externalId} stuck in PROCESSING`);
          res = await call(
            '/transaction/purchase',
            { ...body, requested_amount: 1000 + n, wait_seconds: 1 },
            sim,
          );
        }
        expect(res.body.transaction.id).toBe(answered.get(externalId));
        const result = res.body.transaction.result_code;
        await call('/transaction/confirm', { ...body, result_code: result }, sim);
        confirmed.add(externalId);
      }
    };
    const clients = sims.map((sim) => pos(sim));

    for (let k = 0; k < KILLS; k++) {
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 350));
      await relay.kill('SIGKILL');
      relay = await startRelayProcess(env);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    running = false;
    await Promise.all(clients);

    expect(answered.size).toBeGreaterThan(TERMINALS);
    for (const [externalId, terminalId] of sent) {
      const sim = sims.find((s) => s.terminal_id === terminalId)!;
      const read = await post(
        relay.baseUrl,
        'v1',
        '/transaction/get',
        { terminal_id: terminalId, external_id: externalId, wait_seconds: 5 },
        sim,
      );
      if (answered.has(externalId)) {
        expect(read.status, `${externalId} was answered, so it must exist`).toBe(200);
        expect(read.body.transaction.id).toBe(answered.get(externalId));
      }
      if (read.status === 200) {
        expect(read.body.transaction.state, `${externalId} stuck`).not.toBe('PROCESSING');
      }
      if (confirmed.has(externalId)) {
        expect(['CONFIRMED', 'COMMITTED']).toContain(read.body.transaction.state);
      }
    }
    for (const sim of sims) {
      const open = await post(
        relay.baseUrl,
        'v1',
        '/transaction/unconfirmed',
        { terminal_id: sim.terminal_id },
        sim,
      );
      expect(open.body.transactions).toEqual([]);
    }
  }, 90_000);
});
