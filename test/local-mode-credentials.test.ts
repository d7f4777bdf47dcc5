/**
 * Local mode, row 20 (docs/local-mode.md, "Credentials and trust"): the agent's local API,
 * turned on by the fleet configuration, signs POS credentials in with the verifiers the
 * relay delivers on the agent's retained `local-credentials` topic, and follows their
 * issue, rotation and revocation once the link carries them; while the link is down it
 * keeps the last set it had (a credential revoked meanwhile still pays), also across a
 * restart; an older set delivered again brings nothing back; the account credential never
 * signs in on the LAN. A real relay with its embedded broker, a real agent with the
 * emulated reader, the POS over HTTPS trusting the relay's answer; the agent's link runs
 * through a switch the test cuts and a tap that can hand it an old message again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentConfig } from '../agent/config.js';
import { LOCAL_CREDENTIALS_FILE } from '../agent/local-api/credentials.js';
import { terminalTopics } from '../protocol/index.js';
import type { TerminalCreateResponse } from '../protocol/index.js';
import { pairTransactionId } from '../protocol/transaction-rules/pair-id.js';
import { until } from './support/link-switch.js';
import { startLocalModeRig, type Credential, type LocalModeRig } from './support/local-mode-rig.js';
import { post, type TestRelay } from './support/relay.js';

describe('local mode: POS credentials on the LAN (row 20)', () => {
  let rig: LocalModeRig;
  let relay: TestRelay;
  let terminal: TerminalCreateResponse;
  let accountId: string;
  let config: AgentConfig;
  /** Every pair paid locally, with the transaction's id. */
  const paid = new Map<string, string>();

  const start = () => rig.start();
  const account = (operation: string, body: Record<string, unknown>) =>
    rig.account(operation, body);
  /** A request to the agent's local API over HTTPS, trusting only the relay's answer. */
  const localPos = (credential: Credential, operation: string, body: Record<string, unknown>) =>
    rig.localPos(operation, body, credential);
  const keptRevision = () => rig.keptRevision();
  const storeRevision = () => rig.storeRevision();
  const carried = () => rig.carried();
  /** A POS credential issued for the terminal, as a pairing claim issues one. */
  const issue = async (): Promise<Credential> => {
    const issued = await relay.registry.issuePosCredential(
      accountId,
      terminal.terminal_id,
      new Date().toISOString(),
    );
    return { username: issued.username, password: issued.password };
  };
  const linkDown = () => rig.linkDown();
  const linkUp = () => rig.linkUp();
  /** Refused by the agent: 401 with the spec's error object. */
  const expectRefused = async (credential: Credential) => {
    const answer = await localPos(credential, '/terminal/status', {});
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual({
      error: { code: 'UNAUTHORIZED', description: expect.any(String) },
    });
  };
  /** A purchase paid and confirmed on the local API with `credential`. */
  const pay = async (credential: Credential, externalId: string, amount: number) => {
    const purchase = await localPos(credential, '/transaction/purchase', {
      external_id: externalId,
      requested_amount: amount,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(purchase.status).toBe(200);
    expect(purchase.body.transaction).toMatchObject({
      id: pairTransactionId(terminal.terminal_id, externalId),
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
    const confirmed = await localPos(credential, '/transaction/confirm', {
      external_id: externalId,
      result_code: 'SUCCESS',
    });
    expect([confirmed.status, confirmed.body.transaction?.state]).toEqual([200, 'CONFIRMED']);
    paid.set(externalId, purchase.body.transaction.id);
  };
  /**
   * The table's two checks for every pair paid so far: the reader charged each at most
   * once, and the relay shows each once, confirmed as the reader said.
   */
  const checkReaderAndRelay = async () => {
    for (const [externalId, id] of paid) {
      expect(rig.runs.get(id)?.size, externalId).toBe(1);
      await rig.relayShows(externalId, 'CONFIRMED');
    }
    await rig.checkReaderAndRelay([...paid].map(([externalId, id]) => ({ externalId, id })));
  };

  beforeAll(async () => {
    // Its log says when it read a set of verifiers, and what it did with it.
    rig = await startLocalModeRig({ tap: true, logLevel: 'info' });
    ({ relay, terminal, config } = rig);
    accountId = (await relay.store.getTerminal(terminal.terminal_id))!.accountId;
    await start();
    await until('the link up', () => rig.agent!.link.connected);
    // The fleet turns the local API on; the POS asks the relay what to trust.
    await rig.enableLocalApi();
  }, 60_000);
  afterAll(async () => {
    await rig?.close();
  });

  it('signs in the terminal’s POS credential, never the account credential', async () => {
    const pos = { username: terminal.username, password: terminal.password };
    await pay(pos, 'cred-first', 500);
    // The account credential reaches every terminal on the relay, and none on the LAN.
    expect((await account('/terminal/status', { terminal_id: terminal.terminal_id })).status).toBe(
      200,
    );
    await expectRefused(relay.account);
    expect(
      fs.readFileSync(path.join(config.data_dir, LOCAL_CREDENTIALS_FILE), 'utf8'),
    ).not.toContain(relay.account.username);
    await checkReaderAndRelay();
  });

  it('takes a credential issued after the agent started once the link carries it', async () => {
    await linkDown();
    const issued = await issue();
    // Not yet delivered: the agent does not know it.
    await expectRefused(issued);
    await linkUp();
    await carried();
    await pay(issued, 'cred-issued', 600);
    await checkReaderAndRelay();
  });

  it('refuses a rotated password once the link carried the rotation, takes the new one', async () => {
    const issued = await issue();
    await carried();
    const rotated = await account('/credential/rotate', { username: issued.username });
    expect(rotated.status).toBe(200);
    const renewed = { username: issued.username, password: rotated.body.credential.password };
    await carried();
    await expectRefused(issued);
    await pay(renewed, 'cred-rotated', 700);
    await checkReaderAndRelay();
  });

  it('refuses a revoked credential once the link carried the revocation', async () => {
    const issued = await issue();
    await carried();
    await pay(issued, 'cred-before-revocation', 800);
    const revoked = await account('/credential/revoke', { username: issued.username });
    expect(revoked.status).toBe(200);
    await carried();
    await expectRefused(issued);
    await checkReaderAndRelay();
  });

  it("refuses a disabled account's POS credentials once the link carried it; enabled, they pay again", async () => {
    const issued = await issue();
    await carried();
    await pay(issued, 'cred-before-disable', 850);
    const operator = (operation: string, body: Record<string, unknown>) =>
      post(relay.baseUrl, 'v1', operation, body, relay.operator);
    expect((await operator('/account/disable', { account_id: accountId })).status).toBe(200);
    await carried();
    await expectRefused(issued);
    expect((await operator('/account/enable', { account_id: accountId })).status).toBe(200);
    await carried();
    await pay(issued, 'cred-after-enable', 860);
    await checkReaderAndRelay();
  });

  it('while the link is down a revocation is not known yet: the credential pays until the link is back', async () => {
    const issued = await issue();
    await carried();
    const before = keptRevision();
    await linkDown();
    const revoked = await account('/credential/revoke', { username: issued.username });
    expect(revoked.status).toBe(200);
    // The relay refuses it at once; the agent, cut off, keeps the set it had.
    expect(
      (
        await post(
          relay.baseUrl,
          'v1',
          '/terminal/status',
          { terminal_id: terminal.terminal_id },
          issued,
        )
      ).status,
    ).toBe(401);
    expect(await storeRevision()).toBeGreaterThan(before!);
    await pay(issued, 'cred-revoked-offline', 900);
    expect(keptRevision()).toBe(before);

    await linkUp();
    await carried();
    await expectRefused(issued);
    await checkReaderAndRelay();
  });

  it('restarted with the link down verifies with the set it kept; an older set delivered again brings nothing back', async () => {
    const kept = await issue();
    const toRevoke = await issue();
    await carried();
    // The set as the broker handed it to the agent, with the credential about to be revoked.
    const topic = terminalTopics(terminal.terminal_id).localCredentials;
    const older = rig.tap!.deliveredOn(topic).at(-1)!;
    expect(JSON.parse(older.toString()).revision).toBe(keptRevision());

    await linkDown();
    await rig.agent!.stop();
    rig.agent = undefined;
    await start();
    await until('listening again', () => rig.agent!.local?.api !== undefined);
    expect(rig.agent!.link.connected).toBe(false);
    // What the agent kept, after the restart and before any link: both sign in.
    await pay(kept, 'cred-restarted-1', 1000);
    await pay(toRevoke, 'cred-restarted-2', 1100);

    const revoked = await account('/credential/revoke', { username: toRevoke.username });
    expect(revoked.status).toBe(200);
    await linkUp();
    await carried();
    await expectRefused(toRevoke);

    // The older set, delivered again (as QoS 1 may, out of order), is ignored.
    const revision = keptRevision();
    const heard = rig.logged.length;
    rig.tap!.deliver(topic, older);
    await until('the old set read', () =>
      rig.logged.slice(heard).some((line) => /POS credential verifiers (kept|ignored)/.test(line)),
    );
    expect(keptRevision()).toBe(revision);
    await expectRefused(toRevoke);
    await pay(kept, 'cred-after-older', 1200);
    await checkReaderAndRelay();
  });
});
