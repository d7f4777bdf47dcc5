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

    it('tells a subscriber of each report as it is taken in, before the change it makes', async () => {
      diagnosticsChannel.subscribe(REPORT_TAKEN_CHANNEL, onReport);
      const pos = posFor(relay, await relay.newSimulator());
      const { terminalId } = pos;
      const created = await pos.call('/transaction/purchase', {
        external_id: 'diag-1',
        requested_amount: 1250,
        currency: 'EUR',
        options: { wait_seconds: 10 },
      });
      const txn = created.body.transaction;
      expect(txn.state).toBe('AWAITING_CONFIRM');

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
  },
);
