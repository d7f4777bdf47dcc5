/**
 * Local mode end to end (docs/local-mode.md): the real relay with its embedded broker, an
 * agent in local mode with the emulated card reader, the POS over real HTTP to the
 * agent's local API. The agent's link to the broker runs through a switch the test cuts
 * and restores, so "the link is down" is a real lost TCP connection.
 */
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { emulatedReader, type EmulatedReader } from '../agent/emulated-reader.js';
import type { LocalApiAuthenticator } from '../agent/local-api/authenticator.js';
import { TerminalCreateResponse } from '../protocol/api.js';
import type { AgentConfig } from '../agent/config.js';
import { pairTransactionId } from '../protocol/transaction-rules/pair-id.js';
import { agentConfig } from './agent-harness.js';
import { LinkSwitch, until } from './support/link-switch.js';
import { basicAuth, post, startTestRelay, type TestRelay } from './support/relay.js';

const silent = pino({ level: 'silent' });
const POS = { username: 'pos-local', password: 'pos-local-secret' };
const fixedCredential: LocalApiAuthenticator = {
  check: async (authorization) =>
    authorization === basicAuth(POS)
      ? { ok: true, username: POS.username }
      : { ok: false, status: 401 },
};

describe('local mode', () => {
  let relay: TestRelay;
  let terminalId: string;
  let cloudPos: (operation: string, body: Record<string, unknown>) => ReturnType<typeof post>;
  let link: LinkSwitch;
  let config: AgentConfig;
  let emulated: EmulatedReader;
  /** Reader runs per transaction: the sequences of its records, each a charge attempt. */
  const runs = new Map<string, Set<number>>();
  let agent: RunningAgent | undefined;

  const start = async () => {
    agent = await startAgent(config, {
      reader: emulated.reader,
      logger: silent,
      tuning: { reconnect: { initialMs: 20, maxMs: 100 } },
      localMode: {
        api: { host: '127.0.0.1', port: 0, tls: undefined, authenticator: fixedCredential },
      },
    });
    return agent;
  };
  const localPos = (operation: string, body: Record<string, unknown>) =>
    post(
      agent!.local!.api!.url + '/pos',
      'v1',
      operation,
      { terminal_id: terminalId, ...body },
      POS,
    );

  beforeAll(async () => {
    relay = await startTestRelay();
    const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account);
    const terminal = TerminalCreateResponse.parse(created.body);
    terminalId = terminal.terminal_id;
    const broker = new URL(terminal.agent.broker_url);
    link = new LinkSwitch({ host: broker.hostname, port: Number(broker.port) });
    const url = await link.listen();
    config = agentConfig({
      terminal_id: terminalId,
      broker: { url, username: terminal.agent.username, password: terminal.agent.password },
    });
    emulated = emulatedReader({ delayMs: 20 });
    emulated.firmware.on('record', (record) => {
      if (record.sequence === 0) return;
      const seen = runs.get(record.transaction_id) ?? new Set<number>();
      runs.set(record.transaction_id, seen.add(record.sequence));
    });
    const credential = { username: terminal.username, password: terminal.password };
    cloudPos = (operation, body) =>
      post(relay.baseUrl, 'v1', operation, { terminal_id: terminalId, ...body }, credential);
    await start();
    await until('the link up', () => agent!.link.connected);
  });
  afterEach(async () => {
    link.restore();
    if (!agent) await start();
    await until('the link up', () => agent!.link.connected);
  });
  afterAll(async () => {
    await agent?.stop();
    await emulated?.close();
    await link?.close();
    await relay?.close();
  });

  const eventsOf = async (transactionId: string) => {
    const answer = await post(
      relay.baseUrl,
      'v1',
      '/event/list',
      { filter: { terminal_id: terminalId }, limit: 1000 },
      relay.account,
    );
    expect(answer.status).toBe(200);
    return (answer.body.events as Array<{ data: { id: string; state: string } }>)
      .filter((event) => event.data?.id === transactionId)
      .map((event) => event.data.state);
  };

  it('pays locally with the link down, then the relay shows it once, made locally, events once', async () => {
    link.cut();
    await until('the link down', () => !agent!.link.connected);
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
    await until('the outbox empty', () => agent!.journal.pendingReports().length === 0);
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

    // The relay does not decide what the agent made: a cloud confirm is refused, unchanged.
    const cloudFailure = await cloudPos('/transaction/confirm', {
      external_id: 'local-1',
      result_code: 'PRINTER_ERROR',
    });
    expect([cloudFailure.status, cloudFailure.body.error.code]).toEqual([400, 'INVALID_STATE']);
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
    await until('the link down', () => !agent!.link.connected);
    const id = pairTransactionId(terminalId, 'local-3');
    const paid = await localPos('/transaction/purchase', {
      external_id: 'local-3',
      requested_amount: 900,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(paid.body.transaction.state).toBe('AWAITING_CONFIRM');
    await localPos('/transaction/confirm', { external_id: 'local-3', result_code: 'SUCCESS' });
    const waiting = agent!.journal.pendingReports().length;
    expect(waiting).toBeGreaterThanOrEqual(3);
    await agent!.stop();
    agent = undefined;

    link.restore();
    await start();
    await until('forwarded', async () => {
      const got = await cloudPos('/transaction/get', { external_id: 'local-3' });
      return got.body?.transaction?.state === 'CONFIRMED';
    });
    await until('the outbox empty', () => agent!.journal.pendingReports().length === 0);
    expect(await eventsOf(id)).toEqual(['PROCESSING', 'AWAITING_CONFIRM', 'CONFIRMED']);
    expect(runs.get(id)?.size).toBe(1);
    // The record answers on the local path after the restart too.
    const local = await localPos('/transaction/get', { external_id: 'local-3' });
    expect(local.body.transaction).toMatchObject({ id, state: 'CONFIRMED' });
  });
});
