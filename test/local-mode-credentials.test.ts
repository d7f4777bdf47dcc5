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
import net from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import type { AgentConfig } from '../agent/config.js';
import { emulatedReader, type EmulatedReader } from '../agent/emulated-reader.js';
import { LOCAL_CREDENTIALS_FILE } from '../agent/local-api/credentials.js';
import { trustingFetch } from '../client/local-path.js';
import type { LocalTrust } from '../client/local-trust.js';
import { MemoryJournal, PosClient } from '../client/index.js';
import { TerminalCreateResponse, terminalTopics } from '../protocol/index.js';
import { pairTransactionId } from '../protocol/transaction-rules/pair-id.js';
import { agentConfig } from './agent-harness.js';
import { LinkSwitch, until } from './support/link-switch.js';
import { MqttTap } from './support/mqtt-tap.js';
import { basicAuth, post, startTestRelay, type TestRelay } from './support/relay.js';

interface Credential {
  username: string;
  password: string;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('local mode: POS credentials on the LAN (row 20)', () => {
  let relay: TestRelay;
  let terminal: TerminalCreateResponse;
  let accountId: string;
  let link: LinkSwitch;
  let tap: MqttTap;
  let config: AgentConfig;
  let emulated: EmulatedReader;
  let agent: RunningAgent | undefined;
  let trust: LocalTrust;
  /** Reader runs per transaction: the sequences of its records, each a charge attempt. */
  const runs = new Map<string, Set<number>>();
  /** Every pair paid locally, with the transaction's id. */
  const paid = new Map<string, string>();
  /** The agent's log lines. */
  const logged: string[] = [];

  const start = async () => {
    agent = await startAgent(config, {
      reader: emulated.reader,
      logger: pino({ level: 'info' }, { write: (line: string) => void logged.push(line) }),
      tuning: {
        reconnect: { initialMs: 20, maxMs: 100 },
        localListenRetry: { initialMs: 20, maxMs: 100 },
      },
      localTls: { addresses: () => ({ ip_addresses: ['127.0.0.1'], dns_names: [] }) },
    });
    return agent;
  };
  const account = (operation: string, body: Record<string, unknown>) =>
    post(relay.baseUrl, 'v1', operation, body, relay.account);
  /** A request to the agent's local API over HTTPS, trusting only the relay's answer. */
  const localPos = async (
    credential: Credential,
    operation: string,
    body: Record<string, unknown>,
  ) => {
    const response = await trustingFetch(trust.ca, trust.serverName)(
      `${trust.baseUrls[0]}/v1${operation}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuth(credential) },
        body: JSON.stringify({ terminal_id: terminal.terminal_id, ...body }),
      },
    );
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return { status: response.status, body: (await response.json()) as any };
  };
  /** The revision of the set the agent keeps (its file is written before the set is used). */
  const keptRevision = (): number | undefined => {
    try {
      return JSON.parse(fs.readFileSync(path.join(config.data_dir, LOCAL_CREDENTIALS_FILE), 'utf8'))
        .revision;
    } catch {
      return undefined;
    }
  };
  const storeRevision = async () =>
    (await relay.store.terminalCredentials(terminal.terminal_id)).revision;
  /** Waits until the agent holds the set the relay's store has now. */
  const carried = async () => {
    const revision = await storeRevision();
    await until(`revision ${revision} on the agent`, () => keptRevision() === revision);
  };
  /** A POS credential issued for the terminal, as a pairing claim issues one. */
  const issue = async (): Promise<Credential> => {
    const issued = await relay.registry.issuePosCredential(
      accountId,
      terminal.terminal_id,
      new Date().toISOString(),
    );
    return { username: issued.username, password: issued.password };
  };
  const linkDown = async () => {
    link.cut();
    await until('the link down', () => !agent!.link.connected);
  };
  const linkUp = async () => {
    link.restore();
    await until('the link up', () => agent!.link.connected);
  };
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
      expect(runs.get(id)?.size, externalId).toBe(1);
      await until(`${externalId} confirmed on the relay`, async () => {
        const got = await account('/transaction/get', {
          terminal_id: terminal.terminal_id,
          external_id: externalId,
        });
        return got.body?.transaction?.state === 'CONFIRMED';
      });
      const got = await account('/transaction/get', {
        terminal_id: terminal.terminal_id,
        external_id: externalId,
      });
      expect(got.body.transaction).toMatchObject({ id, result_code: 'SUCCESS' });
      const found = await account('/transaction/search', {
        terminal_id: terminal.terminal_id,
        external_id: externalId,
      });
      expect(found.body.transactions.map((t: { id: string }) => t.id)).toEqual([id]);
    }
  };

  beforeAll(async () => {
    relay = await startTestRelay();
    const created = await account('/terminal/create', {});
    terminal = TerminalCreateResponse.parse(created.body);
    accountId = (await relay.store.getTerminal(terminal.terminal_id))!.accountId;
    const broker = new URL(terminal.agent.broker_url);
    tap = new MqttTap({ host: broker.hostname, port: Number(broker.port) });
    const tapped = await tap.listen();
    link = new LinkSwitch({ host: tapped.host, port: tapped.port });
    config = agentConfig({
      terminal_id: terminal.terminal_id,
      // Its log says when it read a set of verifiers, and what it did with it.
      log_level: 'info',
      broker: {
        url: await link.listen(),
        username: terminal.agent.username,
        password: terminal.agent.password,
      },
    });
    emulated = emulatedReader({ delayMs: 20 });
    emulated.firmware.on('record', (record) => {
      if (record.sequence === 0) return;
      const seen = runs.get(record.transaction_id) ?? new Set<number>();
      runs.set(record.transaction_id, seen.add(record.sequence));
    });
    await start();
    await until('the link up', () => agent!.link.connected);

    // The fleet turns the local API on; the POS asks the relay what to trust.
    const port = await freePort();
    const set = await account('/fleet/config/set', {
      scope: { terminal_id: terminal.terminal_id },
      config: { local_api: { enabled: true, listen: { host: '127.0.0.1', port } } },
    });
    expect(set.status).toBe(200);
    await until('listening', () => agent!.local?.api !== undefined);
    const client = new PosClient({
      baseUrl: relay.baseUrl,
      username: terminal.username,
      password: terminal.password,
      terminalId: terminal.terminal_id,
      journal: new MemoryJournal(),
    });
    try {
      await until('the trust answer names the port', async () => {
        trust = await client.api.localTrust(terminal.terminal_id);
        return trust.port === port;
      });
    } finally {
      await client.close();
    }
    await carried();
  }, 60_000);
  afterAll(async () => {
    await agent?.stop();
    await emulated?.close();
    await link?.close();
    await tap?.close();
    await relay?.close();
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
    const older = tap.deliveredOn(topic).at(-1)!;
    expect(JSON.parse(older.toString()).revision).toBe(keptRevision());

    await linkDown();
    await agent!.stop();
    agent = undefined;
    await start();
    await until('listening again', () => agent!.local?.api !== undefined);
    expect(agent!.link.connected).toBe(false);
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
    const heard = logged.length;
    tap.deliver(topic, older);
    await until('the old set read', () =>
      logged.slice(heard).some((line) => /POS credential verifiers (kept|ignored)/.test(line)),
    );
    expect(keptRevision()).toBe(revision);
    await expectRefused(toRevoke);
    await pay(kept, 'cred-after-older', 1200);
    await checkReaderAndRelay();
  });
});
