/**
 * Local mode end to end (docs/local-mode.md, "The cases"): the real relay with its embedded
 * broker, an agent with the emulated card reader whose local API the fleet configuration
 * turns on, the POS over HTTPS to it, trusting only the relay's trust answer and signing in
 * with the terminal's POS credential (the cloud path's, checked by the verifiers the relay
 * delivered). The agent's link to the broker runs through a switch the test cuts and
 * restores, so "the link is down" is a real lost TCP connection.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { terminalTopics } from '../protocol/mqtt.js';
import { pairTransactionId } from '../protocol/transaction-rules/pair-id.js';
import { until } from './support/link-switch.js';
import { startLocalModeRig, type LocalModeRig } from './support/local-mode-rig.js';
import type { LinkSwitch } from './support/link-switch.js';
import type { MqttTap } from './support/mqtt-tap.js';
import type { TestRelay } from './support/relay.js';

describe('local mode', () => {
  let rig: LocalModeRig;
  let relay: TestRelay;
  let terminalId: string;
  let link: LinkSwitch;
  /** Between the switch and the broker: holds the agent's reports when a test says so. */
  let tap: MqttTap;
  /** Reader runs per transaction: the sequences of its records, each a charge attempt. */
  let runs: Map<string, Set<number>>;
  /** Transactions the reader reversed. */
  let reversed: Set<string>;
  const start = () => rig.start();
  const localPos = (operation: string, body: Record<string, unknown>) =>
    rig.localPos(operation, body);
  const cloudPos = (operation: string, body: Record<string, unknown>) =>
    rig.cloudPos(operation, body);

  beforeAll(async () => {
    rig = await startLocalModeRig({ tap: true });
    ({ relay, terminalId, link, runs, reversed } = rig);
    tap = rig.tap!;
    await start();
    await until('the link up', () => rig.agent!.link.connected);
    // The fleet turns local mode on: the relay sends the terminal's creates to its agent,
    // and the agent listens over HTTPS with the certificate the relay signed.
    await rig.enableLocalApi();
  }, 60_000);
  afterEach(async () => {
    tap.release();
    link.restore();
    if (!rig.agent) await start();
    await until('the link up', () => rig.agent!.link.connected);
  });
  afterAll(async () => {
    await rig?.close();
  });

  const eventsOf = (transactionId: string) => rig.eventsOf(transactionId);

  it('pays locally with the link down, then the relay shows it once, made locally, events once', async () => {
    link.cut();
    await until('the link down', () => !rig.agent!.link.connected);
    const id = pairTransactionId(terminalId, 'local-1');

    const paid = await localPos('/transaction/purchase', {
      external_id: 'local-1',
      requested_amount: 1500,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(paid.status).toBe(200);
    expect(paid.body.transaction).toMatchObject({
      id,
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
    const confirmed = await localPos('/transaction/confirm', {
      external_id: 'local-1',
      result_code: 'SUCCESS',
    });
    expect(confirmed.body.transaction.state).toBe('CONFIRMED');
    const unseen = await cloudPos('/transaction/get', { external_id: 'local-1' });
    expect(unseen.status).toBe(404);

    link.restore();
    await until('forwarded', async () => {
      const got = await cloudPos('/transaction/get', { external_id: 'local-1' });
      return got.body?.transaction?.state === 'CONFIRMED';
    });
    await until('the outbox empty', () => rig.agent!.journal.pendingReports().length === 0);
    const mirrored = (await cloudPos('/transaction/get', { external_id: 'local-1' })).body
      .transaction;
    expect(mirrored).toMatchObject({
      id,
      made_locally: true,
      state: 'CONFIRMED',
      result_code: 'SUCCESS',
      requested_amount: 1500,
      // The agent's times, not the relay's time of arrival.
      created_at: paid.body.transaction.created_at,
      confirmed_at: confirmed.body.transaction.confirmed_at,
    });
    expect(await eventsOf(id)).toEqual(['PROCESSING', 'AWAITING_CONFIRM', 'CONFIRMED']);
    expect(runs.get(id)?.size).toBe(1);

    // Row 6: the POS repeats on the cloud after the forward: the same transaction.
    const cloudRepeat = await cloudPos('/transaction/purchase', {
      external_id: 'local-1',
      requested_amount: 1500,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(cloudRepeat.body.transaction).toMatchObject({
      id,
      state: 'CONFIRMED',
      made_locally: true,
    });
    expect(runs.get(id)?.size).toBe(1);

    // Row 10: a failure on the cloud within the grace period is the agent's to decide:
    // it reverses the payment, and both show it committed as failed.
    const cloudFailure = await cloudPos('/transaction/confirm', {
      external_id: 'local-1',
      result_code: 'PRINTER_ERROR',
    });
    expect(cloudFailure.status).toBe(200);
    expect(cloudFailure.body.transaction).toMatchObject({
      id,
      state: 'COMMITTED',
      result_code: 'PRINTER_ERROR',
    });
    expect(rig.agent!.local!.engine.get(terminalId, 'local-1')?.txn.state).toBe('COMMITTED');
    await until('reversed on the reader', () => reversed.has(id));
  });

  it('answers a repeated local create with the same transaction, another amount IDEMPOTENCY_MISMATCH', async () => {
    const purchase = {
      external_id: 'local-2',
      requested_amount: 700,
      currency: 'EUR',
      wait_seconds: 30,
    };
    const first = await localPos('/transaction/purchase', purchase);
    const again = await localPos('/transaction/purchase', purchase);
    expect(again.body.transaction.id).toBe(first.body.transaction.id);
    const other = await localPos('/transaction/purchase', { ...purchase, requested_amount: 701 });
    expect([other.status, other.body.error.code]).toEqual([400, 'IDEMPOTENCY_MISMATCH']);
    await until('listed unconfirmed on the relay', async () => {
      const listed = await cloudPos('/transaction/unconfirmed', {});
      return listed.body.transactions.some(
        (txn: { id: string; made_locally?: boolean }) =>
          txn.id === first.body.transaction.id && txn.made_locally === true,
      );
    });
    expect(runs.get(first.body.transaction.id)?.size).toBe(1);
    await localPos('/transaction/confirm', { external_id: 'local-2', result_code: 'SUCCESS' });
  });

  it('forwards once what waited when the agent restarted', async () => {
    link.cut();
    await until('the link down', () => !rig.agent!.link.connected);
    const id = pairTransactionId(terminalId, 'local-3');
    const paid = await localPos('/transaction/purchase', {
      external_id: 'local-3',
      requested_amount: 900,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(paid.body.transaction.state).toBe('AWAITING_CONFIRM');
    await localPos('/transaction/confirm', { external_id: 'local-3', result_code: 'SUCCESS' });
    const waiting = rig.agent!.journal.pendingReports().length;
    expect(waiting).toBeGreaterThanOrEqual(3);
    await rig.agent!.stop();
    rig.agent = undefined;

    link.restore();
    await start();
    await until('forwarded', async () => {
      const got = await cloudPos('/transaction/get', { external_id: 'local-3' });
      return got.body?.transaction?.state === 'CONFIRMED';
    });
    await until('the outbox empty', () => rig.agent!.journal.pendingReports().length === 0);
    expect(await eventsOf(id)).toEqual(['PROCESSING', 'AWAITING_CONFIRM', 'CONFIRMED']);
    expect(runs.get(id)?.size).toBe(1);
    // The record answers on the local path after the restart too.
    const local = await localPos('/transaction/get', { external_id: 'local-3' });
    expect(local.body.transaction).toMatchObject({ id, state: 'CONFIRMED' });
  });

  const linkDown = () => rig.linkDown();
  const relayShows = (externalId: string, state: string) => rig.relayShows(externalId, state);

  it('row 1: a cloud create is named by the pair, held by the agent, confirmed by it', async () => {
    const id = pairTransactionId(terminalId, 'cloud-1');
    const paid = await cloudPos('/transaction/purchase', {
      external_id: 'cloud-1',
      requested_amount: 1100,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(paid.body.transaction).toMatchObject({ id, state: 'AWAITING_CONFIRM' });
    expect(paid.body.transaction.made_locally).toBeUndefined();
    expect(rig.agent!.local!.engine.get(terminalId, 'cloud-1')?.txn).toMatchObject({
      id,
      state: 'AWAITING_CONFIRM',
    });
    const confirmed = await cloudPos('/transaction/confirm', {
      external_id: 'cloud-1',
      result_code: 'SUCCESS',
    });
    expect([confirmed.status, confirmed.body.transaction.state]).toEqual([200, 'CONFIRMED']);
    expect(rig.agent!.local!.engine.get(terminalId, 'cloud-1')?.txn.state).toBe('CONFIRMED');
    expect(runs.get(id)?.size).toBe(1);
  });

  it('row 4: a cloud create whose start waits behind a cut link, repeated locally, runs once', async () => {
    const id = pairTransactionId(terminalId, 'cloud-4');
    await linkDown();
    const purchase = { external_id: 'cloud-4', requested_amount: 1200, currency: 'EUR' };
    const cloud = await cloudPos('/transaction/purchase', { ...purchase, wait_seconds: 0 });
    expect(cloud.body.transaction).toMatchObject({ id, state: 'PROCESSING' });
    const local = await localPos('/transaction/purchase', { ...purchase, wait_seconds: 30 });
    expect(local.body.transaction).toMatchObject({ id, state: 'AWAITING_CONFIRM' });
    link.restore();
    // The late start finds the pair and runs nothing; the relay's record takes the agent's state.
    await relayShows('cloud-4', 'AWAITING_CONFIRM');
    await until('the outbox empty', () => rig.agent!.journal.pendingReports().length === 0);
    expect(runs.get(id)?.size).toBe(1);
    await localPos('/transaction/confirm', { external_id: 'cloud-4', result_code: 'SUCCESS' });
  });

  it('row 5: a local create of a pair the relay started answers the same transaction', async () => {
    const id = pairTransactionId(terminalId, 'cloud-5');
    const purchase = { external_id: 'cloud-5', requested_amount: 1300, currency: 'EUR' };
    const cloud = await cloudPos('/transaction/purchase', { ...purchase, wait_seconds: 0 });
    expect(cloud.body.transaction.id).toBe(id);
    await until(
      'the start on the agent',
      () => !!rig.agent!.local!.engine.get(terminalId, 'cloud-5'),
    );
    await linkDown();
    const local = await localPos('/transaction/purchase', { ...purchase, wait_seconds: 30 });
    expect(local.status).toBe(200);
    expect(local.body.transaction).toMatchObject({ id, state: 'AWAITING_CONFIRM' });
    const other = await localPos('/transaction/purchase', { ...purchase, requested_amount: 1301 });
    expect([other.status, other.body.error.code]).toEqual([400, 'IDEMPOTENCY_MISMATCH']);
    link.restore();
    await relayShows('cloud-5', 'AWAITING_CONFIRM');
    expect(runs.get(id)?.size).toBe(1);
    await localPos('/transaction/confirm', { external_id: 'cloud-5', result_code: 'SUCCESS' });
  });

  // Row 6 with the POS's repeat on the cloud made while the link is still down: the relay
  // commits the pair PROCESSING and queues its start, and when the link returns the start
  // and the agent's forward race. The tap between switch and broker decides the order:
  // holding the agent's reports (its acknowledgements of commands pass) makes the start
  // reach the agent before the relay hears of the local create; holding the relay's
  // commands makes the forward reach the relay before the start reaches the agent.
  it.each([
    ['the cloud’s start', 'local-6-start', 'report'],
    ['the forward', 'local-6-forward', 'cmd'],
  ] as const)(
    'row 6, %s first: a local create repeated on the cloud while the link is down is one record, one run',
    async (_first, externalId, held) => {
      const id = pairTransactionId(terminalId, externalId);
      const topics = terminalTopics(terminalId);
      // Nothing in flight when the link goes: after a reconnect mqtt.js sends again what it
      // had in flight one message at a time, each once the broker acknowledged the one
      // before, and only then subscribes and sends anything else; a report in flight, held
      // at the tap, would hold back everything.
      await until('the outbox empty', () => rig.agent!.journal.pendingReports().length === 0);
      await linkDown();
      const purchase = { external_id: externalId, requested_amount: 1600, currency: 'EUR' };
      const local = await localPos('/transaction/purchase', { ...purchase, wait_seconds: 30 });
      expect(local.body.transaction).toMatchObject({
        id,
        state: 'AWAITING_CONFIRM',
        result_code: 'SUCCESS',
      });
      // The POS repeats on the cloud: the relay, which has not heard of the pair, commits
      // it PROCESSING and queues its start.
      const cloud = await cloudPos('/transaction/purchase', { ...purchase, wait_seconds: 0 });
      expect(cloud.body.transaction).toMatchObject({ id, state: 'PROCESSING' });
      const start = (await relay.store.pendingCommands()).find(
        ({ command }) => command.type === 'transaction.start' && command.transaction_id === id,
      )!.command;
      const startOnAgent = () => !!rig.agent!.journal.command(start.command_id);
      const relayRecord = async () =>
        (await cloudPos('/transaction/get', { external_id: externalId, wait_seconds: 0 })).body
          .transaction;

      if (held === 'report') {
        tap.hold((topic) => topic === topics.report, 'toBroker');
        link.restore();
        await until('the start on the agent', startOnAgent);
        // The start found the pair and ran nothing; the relay has heard nothing yet.
        expect(rig.agent!.local!.engine.get(terminalId, externalId)?.txn.state).toBe(
          'AWAITING_CONFIRM',
        );
        expect(await relayRecord()).toMatchObject({ id, state: 'PROCESSING' });
        // The reports wait at the tap (the start may come with the broker's CONNACK, before
        // the reports published on connect got there). Not necessarily all of them: a copy
        // of a report still in flight when the link went is sent again first, and mqtt.js
        // sends nothing else until the broker acknowledged it.
        await until('a report held', () => tap.heldCount > 0);
      } else {
        tap.hold((topic) => topic === topics.command, 'toAgent');
        link.restore();
        await relayShows(externalId, 'AWAITING_CONFIRM');
        await until('the start held', () => tap.heldCount > 0);
        expect(startOnAgent()).toBe(false);
      }
      tap.release();
      await until('the start on the agent', startOnAgent);

      await relayShows(externalId, 'AWAITING_CONFIRM');
      await until('the outbox empty', () => rig.agent!.journal.pendingReports().length === 0);
      expect(await relayRecord()).toMatchObject({
        id,
        // The agent made it, whichever reached the relay first.
        made_locally: true,
        state: 'AWAITING_CONFIRM',
        result_code: 'SUCCESS',
        created_at: local.body.transaction.created_at,
      });
      const confirmed = await localPos('/transaction/confirm', {
        external_id: externalId,
        result_code: 'SUCCESS',
      });
      expect(confirmed.body.transaction.state).toBe('CONFIRMED');
      await relayShows(externalId, 'CONFIRMED');
      await until('the outbox empty', () => rig.agent!.journal.pendingReports().length === 0);
      const searched = await cloudPos('/transaction/search', { external_id: externalId });
      expect(searched.body.transactions.map((txn: { id: string }) => txn.id)).toEqual([id]);
      expect(await eventsOf(id)).toEqual(['PROCESSING', 'AWAITING_CONFIRM', 'CONFIRMED']);
      expect(runs.get(id)?.size).toBe(1);
    },
  );

  it('row 9: a cloud confirm with the link down is OUTCOME_UNKNOWN, decided once locally, never late', async () => {
    const id = pairTransactionId(terminalId, 'cloud-9');
    const paid = await cloudPos('/transaction/purchase', {
      external_id: 'cloud-9',
      requested_amount: 1400,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(paid.body.transaction.state).toBe('AWAITING_CONFIRM');
    await linkDown();
    const cloud = await cloudPos('/transaction/confirm', {
      external_id: 'cloud-9',
      result_code: 'PRINTER_ERROR',
    });
    expect([cloud.status, cloud.body.error.code]).toEqual([504, 'OUTCOME_UNKNOWN']);
    const waiting = (await relay.store.pendingCommands()).find(
      ({ command }) => command.type === 'transaction.confirm',
    );
    expect(waiting).toBeDefined();
    // The client repeats locally, and the POS meanwhile settled on success.
    const local = await localPos('/transaction/confirm', {
      external_id: 'cloud-9',
      result_code: 'SUCCESS',
    });
    expect(local.body.transaction).toMatchObject({ id, state: 'CONFIRMED' });
    link.restore();
    // The cloud's failure reaches the agent after its wait: refused, never applied late
    // (applied, it would reverse the payment within the grace period).
    await until(
      'the late confirm refused',
      () => rig.agent!.journal.command(waiting!.command.command_id)?.outcome === 'EXPIRED',
    );
    await relayShows('cloud-9', 'CONFIRMED');
    await until('the outbox empty', () => rig.agent!.journal.pendingReports().length === 0);
    expect(rig.agent!.local!.engine.get(terminalId, 'cloud-9')?.txn.state).toBe('CONFIRMED');
    expect(reversed.has(id)).toBe(false);
    expect(runs.get(id)?.size).toBe(1);
    // Long: the relay waits its default 25 s for the agent's answer before OUTCOME_UNKNOWN.
  }, 60_000);

  it('row 11: a failure the terminal decided is recorded by the relay, with an event', async () => {
    const id = pairTransactionId(terminalId, 'cloud-11');
    await cloudPos('/transaction/purchase', {
      external_id: 'cloud-11',
      requested_amount: 1500,
      currency: 'EUR',
      wait_seconds: 30,
    });
    await cloudPos('/transaction/confirm', { external_id: 'cloud-11', result_code: 'SUCCESS' });
    await relayShows('cloud-11', 'CONFIRMED');
    await linkDown();
    const local = await localPos('/transaction/confirm', {
      external_id: 'cloud-11',
      result_code: 'PRINTER_ERROR',
    });
    expect(local.body.transaction.state).toBe('COMMITTED');
    link.restore();
    await relayShows('cloud-11', 'COMMITTED');
    expect(await eventsOf(id)).toContain('COMMITTED');
    await until('reversed on the reader', () => reversed.has(id));
    expect(runs.get(id)?.size).toBe(1);
  });

  it('row 12: a cloud continue is decided by the agent, on the paused payment it holds', async () => {
    const id = pairTransactionId(terminalId, 'cloud-12');
    const paused = await cloudPos('/transaction/purchase', {
      external_id: 'cloud-12',
      requested_amount: 1600,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
      wait_seconds: 30,
    });
    expect(paused.body.transaction).toMatchObject({ id, state: 'AWAITING_CONTINUE' });
    const continued = await cloudPos('/transaction/continue', {
      external_id: 'cloud-12',
      requested_amount: 1650,
      wait_seconds: 30,
    });
    expect(continued.status).toBe(200);
    expect(continued.body.transaction).toMatchObject({
      id,
      state: 'AWAITING_CONFIRM',
      requested_amount: 1650,
    });
    expect(rig.agent!.local!.engine.get(terminalId, 'cloud-12')?.txn).toMatchObject({
      state: 'AWAITING_CONFIRM',
      requested_amount: 1650,
    });
    // Not repeatable: the agent's refusal, worded by the rules.
    const again = await cloudPos('/transaction/continue', { external_id: 'cloud-12' });
    expect([again.status, again.body.error?.code]).toEqual([400, 'INVALID_STATE']);
    expect(runs.get(id)?.size).toBe(1);
    await cloudPos('/transaction/confirm', { external_id: 'cloud-12', result_code: 'SUCCESS' });
    await relayShows('cloud-12', 'CONFIRMED');
  });

  it('row 12: a cloud continue with the link down is OUTCOME_UNKNOWN; the local one is applied, the late one never', async () => {
    const id = pairTransactionId(terminalId, 'cloud-12b');
    const paused = await cloudPos('/transaction/purchase', {
      external_id: 'cloud-12b',
      requested_amount: 1700,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
      wait_seconds: 30,
    });
    expect(paused.body.transaction.state).toBe('AWAITING_CONTINUE');
    await linkDown();
    const cloud = cloudPos('/transaction/continue', {
      external_id: 'cloud-12b',
      requested_amount: 1800,
    });
    // Meanwhile the POS continues locally with another amount.
    const local = await localPos('/transaction/continue', {
      external_id: 'cloud-12b',
      requested_amount: 1750,
      wait_seconds: 30,
    });
    expect(local.body.transaction).toMatchObject({ id, state: 'AWAITING_CONFIRM' });
    const answered = await cloud;
    expect([answered.status, answered.body.error?.code]).toEqual([504, 'OUTCOME_UNKNOWN']);
    const waiting = (await relay.store.pendingCommands()).find(
      ({ command }) => command.type === 'transaction.continue_request',
    );
    expect(waiting).toBeDefined();
    link.restore();
    await until(
      'the late continue refused',
      () => rig.agent!.journal.command(waiting!.command.command_id)?.outcome === 'EXPIRED',
    );
    await relayShows('cloud-12b', 'AWAITING_CONFIRM');
    const shown = await cloudPos('/transaction/get', { external_id: 'cloud-12b' });
    expect(shown.body.transaction.requested_amount).toBe(1750);
    expect(runs.get(id)?.size).toBe(1);
    await localPos('/transaction/confirm', { external_id: 'cloud-12b', result_code: 'SUCCESS' });
    // Long: the relay waits its default 25 s for the agent's answer before OUTCOME_UNKNOWN.
  }, 60_000);

  it('row 15: a success confirm of a pair the terminal never saw is refused by it, at once', async () => {
    const confirmed = await cloudPos('/transaction/confirm', {
      external_id: 'cloud-15b',
      result_code: 'SUCCESS',
    });
    expect([confirmed.status, confirmed.body.error?.code]).toEqual([400, 'TRANSACTION_NOT_FOUND']);
    expect(rig.agent!.local!.engine.get(terminalId, 'cloud-15b')).toBeUndefined();
  });

  it('row 15: a failure confirm of a pair never seen is COMMITTED UNKNOWN, decided by the agent', async () => {
    const id = pairTransactionId(terminalId, 'cloud-15');
    const confirmed = await cloudPos('/transaction/confirm', {
      external_id: 'cloud-15',
      result_code: 'PRINTER_ERROR',
    });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.transaction).toMatchObject({ id, state: 'COMMITTED', type: 'UNKNOWN' });
    expect(rig.agent!.local!.engine.get(terminalId, 'cloud-15')?.txn.state).toBe('COMMITTED');
    // A refusal is the agent's, answered as the rules word it.
    const success = await cloudPos('/transaction/confirm', {
      external_id: 'cloud-15',
      result_code: 'SUCCESS',
    });
    expect([success.status, success.body.error?.code]).toEqual([400, 'INVALID_STATE']);
    const later = await cloudPos('/transaction/purchase', {
      external_id: 'cloud-15',
      requested_amount: 100,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(later.body.transaction?.state ?? later.body.error?.code).not.toBe('PROCESSING');
    expect(runs.get(id)).toBeUndefined();
  });
});

// The agent's timers and counts, each tested with short settings on an agent of its own: the
// pause time-out (row 12), refunds counted against a purchase (row 13), the unconfirmed
// limit (row 14). The relay's own limit is set as the agent's, as in the field (both 10 by
// default).
describe('local mode: the agent’s pause time-out, refunds and unconfirmed limit', () => {
  const LIMIT = 2;
  let rig: LocalModeRig;
  let terminalId: string;
  /** A purchase the relay made and confirmed before local mode was on: the agent holds no record of it. */
  const MADE_BEFORE = 'made-before-local-mode';
  const localPos = (operation: string, body: Record<string, unknown>) =>
    rig.localPos(operation, body);
  const cloudPos = (operation: string, body: Record<string, unknown>) =>
    rig.cloudPos(operation, body);
  const pair = (externalId: string) => ({
    externalId,
    id: pairTransactionId(terminalId, externalId),
  });

  beforeAll(async () => {
    rig = await startLocalModeRig({
      relay: { maxUnconfirmed: LIMIT },
      settings: { pauseTimeoutMs: 1500, maxUnconfirmed: LIMIT },
    });
    ({ terminalId } = rig);
    await rig.start();
    await until('the link up', () => rig.agent!.link.connected);
    const before = await cloudPos('/transaction/purchase', {
      external_id: MADE_BEFORE,
      requested_amount: 2000,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(before.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
    await cloudPos('/transaction/confirm', { external_id: MADE_BEFORE, result_code: 'SUCCESS' });
    await rig.enableLocalApi();
  }, 60_000);
  afterEach(async () => {
    rig.link.restore();
    await until('the link up', () => rig.agent!.link.connected);
    // Nothing left unconfirmed for the next test's count, also after a test that failed.
    for (const { txn } of rig.agent!.local!.engine.unconfirmed()) {
      if (txn.state !== 'AWAITING_CONFIRM') continue;
      await localPos('/transaction/confirm', {
        external_id: txn.external_id,
        result_code: txn.result_code === 'SUCCESS' ? 'SUCCESS' : 'ABORTED',
      });
    }
    await until('nothing unconfirmed', () => rig.agent!.local!.engine.unconfirmed().length === 0);
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('row 12: a pause times out on the agent while the link is down: aborted once, shown once; a later continue is refused', async () => {
    const paused = pair('pause-timeout');
    await rig.linkDown();
    const purchase = await localPos('/transaction/purchase', {
      external_id: paused.externalId,
      requested_amount: 1900,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
      wait_seconds: 30,
    });
    expect(purchase.status).toBe(200);
    expect(purchase.body.transaction).toMatchObject({ id: paused.id, state: 'AWAITING_CONTINUE' });

    // The agent's timer decides, with the relay out of reach: aborted, and the reader told.
    await until('the pause timed out', async () => {
      const got = await localPos('/transaction/get', { external_id: paused.externalId });
      return got.body.transaction.state !== 'AWAITING_CONTINUE';
    });
    const timedOut = (await localPos('/transaction/get', { external_id: paused.externalId })).body
      .transaction;
    expect(timedOut).toMatchObject({
      id: paused.id,
      state: 'AWAITING_CONFIRM',
      result_code: 'ABORTED',
      result_description: expect.stringContaining('Not continued within'),
    });
    await until('cancelled on the reader', () => rig.cancelled.get(paused.id) === 1);

    // A continue after the time-out is refused as the rules say, on either path.
    const late = await localPos('/transaction/continue', {
      external_id: paused.externalId,
      requested_amount: 1950,
    });
    expect([late.status, late.body.error?.code]).toEqual([400, 'INVALID_STATE']);

    await rig.linkUp();
    await rig.relayShows(paused.externalId, 'AWAITING_CONFIRM');
    const lateCloud = await cloudPos('/transaction/continue', {
      external_id: paused.externalId,
      requested_amount: 1950,
    });
    expect([lateCloud.status, lateCloud.body.error?.code]).toEqual([400, 'INVALID_STATE']);
    await until('the outbox empty', () => rig.agent!.journal.pendingReports().length === 0);
    const shown = (await cloudPos('/transaction/get', { external_id: paused.externalId })).body
      .transaction;
    expect(shown).toMatchObject({
      id: paused.id,
      made_locally: true,
      state: 'AWAITING_CONFIRM',
      result_code: 'ABORTED',
      requested_amount: 1900,
      updated_at: timedOut.updated_at,
    });
    expect(await rig.eventsOf(paused.id)).toEqual([
      'PROCESSING',
      'AWAITING_CONTINUE',
      'AWAITING_CONFIRM',
    ]);

    // The POS takes the failure; nothing more reaches the reader.
    const confirmed = await localPos('/transaction/confirm', {
      external_id: paused.externalId,
      result_code: 'ABORTED',
    });
    expect(confirmed.body.transaction).toMatchObject({
      state: 'COMMITTED',
      result_code: 'ABORTED',
    });
    await rig.relayShows(paused.externalId, 'COMMITTED');
    expect(rig.cancelled.get(paused.id)).toBe(1);
    expect(rig.runs.get(paused.id)?.size).toBe(1);
    await rig.checkReaderAndRelay([paused]);
  });

  it('row 13: local refunds are counted by the agent against the purchase; an original it lacks is ORIGINAL_PURCHASE_NOT_FOUND', async () => {
    const original = pair('refund-original');
    const first = pair('refund-1');
    const rest = pair('refund-rest');
    const paid = await localPos('/transaction/purchase', {
      external_id: original.externalId,
      requested_amount: 1000,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(paid.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
    await localPos('/transaction/confirm', {
      external_id: original.externalId,
      result_code: 'SUCCESS',
    });

    // With the relay out of reach the agent alone counts what the purchase can give back.
    await rig.linkDown();
    const refund = (externalId: string, amount: number, originalExternalId: string) =>
      localPos('/transaction/refund', {
        external_id: externalId,
        requested_amount: amount,
        currency: 'EUR',
        original_purchase_external_id: originalExternalId,
        wait_seconds: 30,
      });
    const refunded = await refund(first.externalId, 600, original.externalId);
    expect(refunded.status).toBe(200);
    expect(refunded.body.transaction).toMatchObject({
      id: first.id,
      type: 'REFUND',
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      original_purchase_id: original.id,
      original_purchase_external_id: original.externalId,
    });
    await localPos('/transaction/confirm', {
      external_id: first.externalId,
      result_code: 'SUCCESS',
    });

    const beyond = await refund('refund-beyond', 500, original.externalId);
    expect([beyond.status, beyond.body.error?.code]).toEqual([400, 'REFUND_EXCEEDS_REFUNDABLE']);
    expect(beyond.body.error.description).toContain('refundable amount 400');
    expect(rig.agent!.local!.engine.get(terminalId, 'refund-beyond')).toBeUndefined();

    // A purchase the relay made before local mode was on: the relay has it, the agent's
    // journal does not, and the agent decides.
    const lacking = await refund('refund-of-unknown', 100, MADE_BEFORE);
    expect([lacking.status, lacking.body.error?.code]).toEqual([
      400,
      'ORIGINAL_PURCHASE_NOT_FOUND',
    ]);
    expect(lacking.body.error.description).toContain(`no purchase ${MADE_BEFORE}`);
    expect(rig.agent!.local!.engine.get(terminalId, 'refund-of-unknown')).toBeUndefined();

    const whole = await refund(rest.externalId, 400, original.externalId);
    expect(whole.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
    await localPos('/transaction/confirm', {
      external_id: rest.externalId,
      result_code: 'SUCCESS',
    });
    expect(
      rig.agent!.local!.engine.refundable(
        rig.agent!.local!.engine.get(terminalId, original.externalId)!,
      ),
    ).toBe(0);

    await rig.linkUp();
    for (const { externalId } of [original, first, rest])
      await rig.relayShows(externalId, 'CONFIRMED');
    const shown = await cloudPos('/transaction/get', { external_id: first.externalId });
    expect(shown.body.transaction).toMatchObject({
      made_locally: true,
      type: 'REFUND',
      original_purchase_id: original.id,
    });
    for (const unknown of ['refund-beyond', 'refund-of-unknown']) {
      expect((await cloudPos('/transaction/get', { external_id: unknown })).status).toBe(404);
    }
    for (const { id } of [first, rest]) expect(rig.runs.get(id)?.size).toBe(1);
    await rig.checkReaderAndRelay([original, first, rest]);
  });

  it('row 14: the unconfirmed limit counts what was made on both paths', async () => {
    const cloudMade = pair('limit-cloud');
    const localMade = pair('limit-local');
    const made = await cloudPos('/transaction/purchase', {
      external_id: cloudMade.externalId,
      requested_amount: 300,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(made.body.transaction).toMatchObject({ id: cloudMade.id, state: 'AWAITING_CONFIRM' });
    const local = await localPos('/transaction/purchase', {
      external_id: localMade.externalId,
      requested_amount: 400,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(local.body.transaction).toMatchObject({ id: localMade.id, state: 'AWAITING_CONFIRM' });
    expect(rig.agent!.local!.engine.unconfirmed()).toHaveLength(LIMIT);

    const third = await localPos('/transaction/purchase', {
      external_id: 'limit-local-3',
      requested_amount: 500,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect([third.status, third.body.error?.code]).toEqual([400, 'TOO_MANY_UNCONFIRMED']);
    expect(third.body.error.description).toContain(`has ${LIMIT} unconfirmed transactions`);
    expect(rig.agent!.local!.engine.get(terminalId, 'limit-local-3')).toBeUndefined();

    // On the cloud path the refusal is the relay's own count, over its mirror of what the
    // agent made (hence the wait for the forward): it commits nothing and sends no start.
    await until('the outbox empty', () => rig.agent!.journal.pendingReports().length === 0);
    const thirdCloud = await cloudPos('/transaction/purchase', {
      external_id: 'limit-cloud-3',
      requested_amount: 500,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect([thirdCloud.status, thirdCloud.body.error?.code]).toEqual([400, 'TOO_MANY_UNCONFIRMED']);
    expect(rig.agent!.local!.engine.get(terminalId, 'limit-cloud-3')).toBeUndefined();

    for (const { externalId } of [cloudMade, localMade]) {
      const confirmed = await localPos('/transaction/confirm', {
        external_id: externalId,
        result_code: 'SUCCESS',
      });
      expect(confirmed.body.transaction.state).toBe('CONFIRMED');
      await rig.relayShows(externalId, 'CONFIRMED');
    }
    for (const unknown of ['limit-local-3', 'limit-cloud-3']) {
      expect((await cloudPos('/transaction/get', { external_id: unknown })).status).toBe(404);
    }
    for (const { id } of [cloudMade, localMade]) expect(rig.runs.get(id)?.size).toBe(1);
    await rig.checkReaderAndRelay([cloudMade, localMade]);
  });

  it('row 14: a cloud create queued while the link is down is not run when the agent holds the limit', async () => {
    const heldLocally = [pair('limit-held-1'), pair('limit-held-2')];
    const queued = pair('limit-queued');
    await rig.linkDown();
    for (const [n, { externalId }] of heldLocally.entries()) {
      const paid = await localPos('/transaction/purchase', {
        external_id: externalId,
        requested_amount: 600 + n,
        currency: 'EUR',
        wait_seconds: 30,
      });
      expect(paid.body.transaction.state).toBe('AWAITING_CONFIRM');
    }
    // The relay knows nothing of them yet: it commits the create and queues its start.
    const cloud = await cloudPos('/transaction/purchase', {
      external_id: queued.externalId,
      requested_amount: 700,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(cloud.body.transaction).toMatchObject({ id: queued.id, state: 'PROCESSING' });
    await rig.linkUp();
    // The agent counts it with what it holds: not run, ended as failed before the reader.
    await rig.relayShows(queued.externalId, 'AWAITING_CONFIRM');
    const shown = (await cloudPos('/transaction/get', { external_id: queued.externalId })).body
      .transaction;
    expect(shown).toMatchObject({ result_code: 'TOO_MANY_UNCONFIRMED' });
    expect(rig.runs.get(queued.id)).toBeUndefined();
    const failed = await cloudPos('/transaction/confirm', {
      external_id: queued.externalId,
      result_code: 'TOO_MANY_UNCONFIRMED',
    });
    expect(failed.body.transaction?.state).toBe('COMMITTED');
    for (const { externalId } of heldLocally) {
      await localPos('/transaction/confirm', { external_id: externalId, result_code: 'SUCCESS' });
      await rig.relayShows(externalId, 'CONFIRMED');
    }
    for (const { id } of heldLocally) expect(rig.runs.get(id)?.size).toBe(1);
    await rig.checkReaderAndRelay([...heldLocally, queued]);
  });
});
