import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { posFor, startTestRelay, type TestRelay } from './support/relay.js';

describe.each(['agent', 'in-process'] as const)(
  'a purchase from create to commit over real HTTP (%s simulators)',
  (simulatorMode) => {
    let relay: TestRelay;
    beforeAll(async () => {
      relay = await startTestRelay({ simulatorMode });
    });
    afterAll(async () => {
      await relay.close();
    });

    it('creates, long-polls to AWAITING_CONFIRM, confirms and reads back CONFIRMED', async () => {
      const pos = posFor(relay, await relay.newSimulator());
      const created = await pos.call('/transaction/purchase', {
        external_id: 'order-1',
        requested_amount: 1250,
        currency: 'EUR',
        options: { wait_seconds: 10 },
      });
      expect(created.status).toBe(200);
      expect(created.body.transaction).toMatchObject({
        state: 'AWAITING_CONFIRM',
        type: 'PURCHASE',
        result_code: 'SUCCESS',
        requested_amount: 1250,
        total_amount: 1250,
        currency: 'EUR',
        terminal_id: pos.terminalId,
      });
      expect(created.body.transaction.id).toMatch(/^txn-[0-9A-Z]{26}$/);

      const confirmed = await pos.call('/transaction/confirm', {
        external_id: 'order-1',
        result_code: 'SUCCESS',
      });
      expect(confirmed.status).toBe(200);
      expect(confirmed.body.transaction.state).toBe('CONFIRMED');
      expect(confirmed.body.transaction.confirmed_at).toMatch(/Z$/);

      const read = await pos.call('/transaction/get', { external_id: 'order-1' });
      expect(read.body.transaction).toEqual(confirmed.body.transaction);
    });
  },
);
