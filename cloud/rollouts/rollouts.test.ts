/**
 * Rollout waves on fake time, against a real SQLite store: one terminal, then the share,
 * then the rest, each after its health gate; failures over the threshold (or silence past
 * the deadline) pause; pause, resume and a newer rollout for the cohort.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  RolloutStartRequest,
  UpdateOrderMessage,
  UpdateStatusMessage,
} from '../../protocol/index.js';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { ApiError } from '../errors.js';
import { SqliteStore } from '../store/sqlite.js';
import { terminalRecord } from '../store/testing/store-fixtures.js';
import { Rollouts } from './rollouts.js';

/** The operator, who starts, pauses and resumes rollouts of its releases. */
const OPERATOR = { accountId: 'acct-op', username: 'op-1', role: 'operator' as const };
/** The merchant account whose cohorts they reach, which reads them. */
const MERCHANT = { accountId: 'acct-1', username: 'u-1', role: 'account' as const };
const START = Date.parse('2026-11-24T03:00:00.000Z');

describe('rollouts', () => {
  let store: SqliteStore;
  let timers: ManualTimers;
  let orders: Array<{ terminalId: string } & UpdateOrderMessage>;
  let rollouts: Rollouts;

  beforeEach(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-rollouts-'));
    store = new SqliteStore(path.join(dir, 'relay.sqlite'));
    await store.createAccount({
      id: 'acct-1',
      kind: 'merchant',
      createdAt: new Date(START).toISOString(),
    });
    await store.createAccount({
      id: 'acct-op',
      kind: 'operator',
      createdAt: new Date(START).toISOString(),
    });
    await store.addRelease({
      accountId: 'acct-op',
      version: '1.4.2',
      arch: 'linux-x64',
      manifest: '{}',
      signature: 'c2ln',
      archiveSha256: 'a'.repeat(64),
      archiveSize: 1,
      file: 'x.tar.gz',
      publishedAt: new Date(START).toISOString(),
    });
    timers = new ManualTimers(START);
    orders = [];
    rollouts = new Rollouts({
      store,
      clock: timers.clock,
      timers,
      publishOrder: (terminalId, order) => {
        orders.push({ terminalId, ...order });
        return true;
      },
      logger: pino({ level: 'silent' }),
    });
    await rollouts.lead();
  });

  afterEach(async () => {
    rollouts.unlead();
    await store.close();
  });

  /** `count` terminals claimed into `cohort`: t-cohort-north-01, -02, … */
  async function cohortOf(count: number, cohort = 'cohort-north') {
    for (let i = 1; i <= count; i++) {
      const id = `t-${cohort}-${String(i).padStart(2, '0')}`;
      await store.createTerminal({ ...terminalRecord(id), cohort });
    }
  }

  const report = (terminalId: string, orderId: string, result: string, reason?: string) =>
    rollouts.statusReported(terminalId, {
      phase: 'idle',
      last: {
        order_id: orderId,
        version: '1.4.2',
        result,
        ...(reason ? { reason } : {}),
        at: new Date(timers.now).toISOString(),
      },
      at: new Date(timers.now).toISOString(),
    } satisfies UpdateStatusMessage);

  /** Lets `ms` pass on the fake clock, then waits for the leader's check it caused. */
  async function later(ms: number) {
    timers.advance(ms);
    await rollouts.check();
  }

  /** The operator's rollout of 1.4.2 to acct-1's cohort-north, with `request`'s changes. */
  const startNorth = (request: Partial<RolloutStartRequest> = {}) =>
    rollouts.start(OPERATOR, {
      account_id: 'acct-1',
      version: '1.4.2',
      cohort: 'cohort-north',
      ...request,
    });

  const ordered = (id: string) => orders.filter((o) => o.order_id === id).map((o) => o.terminalId);

  it('orders one terminal, then the share, then the rest, each after its gate passed', async () => {
    await cohortOf(20);
    const started = await startNorth();
    expect(started).toMatchObject({ state: 'running', wave: 1, share_percent: 10 });
    expect(ordered(started.id)).toEqual(['t-cohort-north-01']);
    expect(orders[0]).toMatchObject({ order_id: started.id, version: '1.4.2' });
    // Nothing moves while the first terminal has not said how its update ended.
    await later(60_000);
    expect(ordered(started.id)).toHaveLength(1);
    await report('t-cohort-north-01', started.id, 'installed');
    await later(0);
    // 10 % of 20: two more.
    expect(ordered(started.id)).toEqual([
      't-cohort-north-01',
      't-cohort-north-02',
      't-cohort-north-03',
    ]);
    await report('t-cohort-north-02', started.id, 'installed');
    await later(0);
    expect((await rollouts.get(OPERATOR, started.id)).wave).toBe(2);
    await report('t-cohort-north-03', started.id, 'installed');
    await later(0);
    expect(ordered(started.id)).toHaveLength(20);
    for (const terminalId of ordered(started.id).slice(3)) {
      await report(terminalId, started.id, 'installed');
    }
    await later(0);
    const done = await rollouts.get(OPERATOR, started.id);
    expect(done).toMatchObject({ state: 'completed', wave: 3 });
    expect(done.terminals.every((t) => t.result === 'installed')).toBe(true);
  });

  it('a failure in the first wave pauses at once, with the terminal’s reason; nobody else is ordered', async () => {
    await cohortOf(3);
    const { id } = await startNorth();
    await report(
      't-cohort-north-01',
      id,
      'rolled_back',
      'not healthy within 90 s: the reader does not answer',
    );
    await later(0);
    const paused = await rollouts.get(OPERATOR, id);
    expect(paused.state).toBe('paused');
    expect(paused.paused_reason).toBe(
      'wave 1: 1 of 1 failed (at most 0 allowed): t-cohort-north-01: rolled_back: not healthy within 90 s: the reader does not answer',
    );
    await later(3_600_000);
    expect(ordered(id)).toEqual(['t-cohort-north-01']);
  });

  it('a terminal silent past the deadline is a failure', async () => {
    await cohortOf(3);
    const { id } = await startNorth({ deadline_s: 60 });
    await later(59_000);
    expect((await rollouts.get(OPERATOR, id)).state).toBe('running');
    await later(1_000);
    expect(await rollouts.get(OPERATOR, id)).toMatchObject({
      state: 'paused',
      paused_reason:
        'wave 1: 1 of 1 failed (at most 0 allowed): t-cohort-north-01: no report within 60 s',
    });
  });

  it('after the first wave, failures up to the threshold pass and more pause', async () => {
    await cohortOf(30);
    const { id } = await startNorth({ share_percent: 34, max_failure_percent: 10 });
    await report(ordered(id)[0]!, id, 'installed');
    await later(0);
    const second = ordered(id).slice(1);
    // 34 % of 30: 11 terminals, of which 10 % (one) may fail.
    expect(second).toHaveLength(11);
    await report(second[0]!, id, 'refused', 'signature does not verify');
    for (const terminalId of second.slice(1)) await report(terminalId, id, 'installed');
    await later(0);
    expect((await rollouts.get(OPERATOR, id)).wave).toBe(3);
    const third = ordered(id).slice(12);
    expect(third).toHaveLength(18);
    await report(third[0]!, id, 'failed', 'download: disk full');
    await report(third[1]!, id, 'rolled_back');
    await later(0);
    const paused = await rollouts.get(OPERATOR, id);
    expect(paused.state).toBe('paused');
    expect(paused.paused_reason).toMatch(/^wave 3: 2 of 18 failed \(at most 1 allowed\): /);
    expect(paused.paused_reason).toContain(`${third[0]}: failed: download: disk full`);
  });

  it('pause holds the next wave, resume goes on; resuming a gate’s pause accepts that wave', async () => {
    await cohortOf(3);
    const { id } = await startNorth({ deadline_s: 60 });
    expect(await rollouts.pause(OPERATOR, id)).toMatchObject({
      state: 'paused',
      paused_reason: 'paused by an operator',
    });
    await report('t-cohort-north-01', id, 'installed');
    await later(120_000);
    expect(ordered(id)).toHaveLength(1);
    await expect(rollouts.pause(OPERATOR, id)).rejects.toMatchObject({
      code: 'ROLLOUT_STATE_CONFLICT',
    });
    expect(await rollouts.resume(OPERATOR, id)).toMatchObject({ state: 'running', wave: 1 });
    await later(0);
    expect(ordered(id)).toHaveLength(2);
    // The second terminal stays silent: the gate pauses at its deadline.
    await later(60_000);
    expect((await rollouts.get(OPERATOR, id)).state).toBe('paused');
    // The operator accepts it: the last wave is ordered; the silent one is not ordered again.
    expect(await rollouts.resume(OPERATOR, id)).toMatchObject({ state: 'running', wave: 3 });
    expect(ordered(id)).toEqual(['t-cohort-north-01', 't-cohort-north-02', 't-cohort-north-03']);
    await report('t-cohort-north-03', id, 'installed');
    await later(0);
    expect((await rollouts.get(OPERATOR, id)).state).toBe('completed');
  });

  it('a newer rollout for the cohort supersedes the running one', async () => {
    await cohortOf(3);
    const first = await startNorth();
    const second = await startNorth();
    expect(await rollouts.get(OPERATOR, first.id)).toMatchObject({
      state: 'superseded',
      superseded_by: second.id,
    });
    await report('t-cohort-north-01', first.id, 'installed');
    await later(0);
    expect(ordered(first.id)).toHaveLength(1);
    expect((await rollouts.list(OPERATOR)).map((r) => r.id)).toEqual([second.id, first.id]);
    await expect(rollouts.resume(OPERATOR, first.id)).rejects.toMatchObject({
      code: 'ROLLOUT_STATE_CONFLICT',
    });
  });

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (error: unknown) => (error instanceof ApiError ? error.code : error),
    );

  it('refuses what cannot be rolled out', async () => {
    await cohortOf(1);
    expect(await refusal(startNorth({ version: '9.9.9' }))).toBe('RELEASE_NOT_FOUND');
    expect(await refusal(startNorth({ arch: 'linux-arm64' }))).toBe('RELEASE_NOT_FOUND');
    expect(await refusal(startNorth({ cohort: 'cohort-south' }))).toBe('COHORT_NOT_FOUND');
    // The operator names a merchant account; its own or one unknown is none.
    expect(await refusal(startNorth({ account_id: undefined }))).toBe('INVALID_REQUEST');
    expect(await refusal(startNorth({ account_id: 'acct-op' }))).toBe('NOT_FOUND');
    expect(await refusal(startNorth({ account_id: 'acct-nobody' }))).toBe('NOT_FOUND');
    // A report of an order this rollout did not give that terminal changes nothing.
    const { id } = await startNorth();
    await report('t-other', id, 'rolled_back');
    await later(0);
    expect((await rollouts.get(OPERATOR, id)).state).toBe('running');
  });

  it('the operator manages rollouts; a merchant reads those that reach it; a terminal nothing', async () => {
    await cohortOf(1);
    const { id } = await startNorth();
    const other = { accountId: 'acct-2', username: 'u-2', role: 'account' as const };
    const terminal = {
      accountId: 'acct-1',
      username: 't-cohort-north-01',
      terminalId: 't-cohort-north-01',
      role: 'terminal' as const,
    };
    const request = { account_id: 'acct-1', version: '1.4.2', cohort: 'cohort-north' };
    for (const who of [MERCHANT, terminal]) {
      expect(await refusal(rollouts.start(who, request))).toBe('FORBIDDEN');
      expect(await refusal(rollouts.pause(who, id))).toBe('FORBIDDEN');
      expect(await refusal(rollouts.resume(who, id))).toBe('FORBIDDEN');
    }
    expect(await refusal(rollouts.get(terminal, id))).toBe('FORBIDDEN');
    expect(await refusal(rollouts.list(terminal))).toBe('FORBIDDEN');
    expect((await rollouts.get(MERCHANT, id)).account_id).toBe('acct-1');
    expect((await rollouts.list(MERCHANT)).map((r) => r.id)).toEqual([id]);
    // Another account's rollout is one that does not exist.
    expect(await refusal(rollouts.get(other, id))).toBe('ROLLOUT_NOT_FOUND');
    expect(await rollouts.list(other)).toEqual([]);
    expect(await refusal(rollouts.list(other, 'acct-1'))).toBe('NOT_FOUND');
    // The operator lists every account's, or one's.
    expect((await rollouts.list(OPERATOR, 'acct-1')).map((r) => r.id)).toEqual([id]);
    expect(await rollouts.list(OPERATOR, 'acct-2')).toEqual([]);
  });

  it('a cohort of one: its one wave passed, the rollout is complete', async () => {
    await cohortOf(1);
    const { id } = await startNorth();
    await report('t-cohort-north-01', id, 'installed');
    await later(0);
    expect((await rollouts.get(OPERATOR, id)).state).toBe('completed');
  });
});
