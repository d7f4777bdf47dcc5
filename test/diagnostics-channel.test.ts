import diagnosticsChannel from 'node:diagnostics_channel';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { REPORT_TAKEN_CHANNEL, type ReportTaken } from '../cloud/transactions/diagnostics.js';
import { posFor, startTestRelay, type TestRelay } from './support/relay.js';

describe.each(['agent', 'in-process'] as const)(
  'the report-taken diagnostics channel (%s simulators)',
  (simulatorMode) => {
    let relay: TestRelay;
    const taken: Array<ReportTaken & { at: number }> = [];
    const onReport = (message: unknown) =>
      taken.push({ ...(message as ReportTaken), at: performance.timeOrigin + performance.now() });

    beforeAll(async () => {
      relay = await startTestRelay({ simulatorMode });
    });
    afterAll(async () => {
      await relay.close();
    });
    afterEach(() => {
      diagnosticsChannel.unsubscribe(REPORT_TAKEN_CHANNEL, onReport);
    });

    /** A purchase on a new simulated terminal, long-polled to its result. */
    async function purchase(externalId: string) {
      const pos = posFor(relay, await relay.newSimulator());
      const created = await pos.call('/transaction/purchase', {
        external_id: externalId,
        requested_amount: 1250,
        currency: 'EUR',
        options: { wait_seconds: 10 },
      });
      expect(created.body.transaction.state).toBe('AWAITING_CONFIRM');
      return { terminalId: pos.terminalId, txn: created.body.transaction };
    }

    it('tells a subscriber of each report as it is taken in, before the change it makes', async () => {
      diagnosticsChannel.subscribe(REPORT_TAKEN_CHANNEL, onReport);
      const { terminalId, txn } = await purchase('diag-1');

      const results = taken.filter(
        (t) => t.report.type === 'transaction' && t.report.transaction_id === txn.id,
      );
      expect(results).toHaveLength(1);
      expect(results[0]).toMatchObject({
        terminalId,
        report: { phase: 'COMPLETED', result_code: 'SUCCESS' },
      });
      // updated_at is taken after the report arrived (and truncated to the millisecond).
      expect(Math.floor(results[0]!.at)).toBeLessThanOrEqual(Date.parse(txn.updated_at));
      expect(taken.some((t) => t.terminalId === terminalId && t.report.type === 'status')).toBe(
        true,
      );
    });

    it('publishes nothing to one who unsubscribed', async () => {
      const before = taken.length;
      await purchase('diag-2');
      expect(taken).toHaveLength(before);
    });
  },
);
