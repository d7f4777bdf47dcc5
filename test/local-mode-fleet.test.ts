/**
 * Local mode as the field runs it (docs/local-mode.md): the fleet's `local_api` setting
 * turns the agent's local API on and off, HTTPS with the certificate the relay signed,
 * the POS trusting what the relay's trust answer gives; the bounds while the relay is out
 * of reach; the backlog and reachability in the terminal status of both paths. A real
 * relay with its embedded broker, a real agent with the emulated reader, its link through
 * a switch the test cuts.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningAgent } from '../agent/agent.js';
import { MemoryJournal, PosClient } from '../client/index.js';
import type { LocalTrust } from '../client/local-trust.js';
import { SimulatorCreateResponse, type TerminalCreateResponse } from '../protocol/api.js';
import { runSimulator } from '../cloud/cli.js';
import { localDnsName } from '../protocol/index.js';
import { UpdateConfig } from '../agent/config.js';
import { Updater } from '../agent/updater.js';
import { systemClock, systemTimers } from '../common/clock.js';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import type { UpdateStatusMessage } from '../protocol/update.js';
import { tempDir } from './agent-harness.js';
import { buildRelease, installFirst, serveArchives } from './support/agent-releases.js';
import { until, type LinkSwitch } from './support/link-switch.js';
import { freePort, startLocalModeRig, type LocalModeRig } from './support/local-mode-rig.js';
import { post, type TestRelay } from './support/relay.js';

/** The agent's clock: a test moves it alone to age what waits to be forwarded. */
let offsetMs = 0;
const agentClock = { now: () => new Date(Date.now() + offsetMs) };

/** Whether something accepts TCP connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

describe('local mode from the fleet configuration', () => {
  let rig: LocalModeRig;
  let relay: TestRelay;
  let terminal: TerminalCreateResponse;
  let pos: { username: string; password: string };
  let link: LinkSwitch;
  let agent: RunningAgent;
  let port: number;
  let trust: LocalTrust;
  /** The agent's log lines. */
  let logged: string[];

  const setLocalApi = (localApi: Record<string, unknown>) => rig.setLocalApi(localApi);
  const cloudPos = (operation: string, body: Record<string, unknown>) =>
    rig.cloudPos(operation, body);
  /** A request to the agent over HTTPS, trusting only the relay's answer. */
  const localPos = (operation: string, body: Record<string, unknown>) => {
    rig.trust = trust;
    return rig.localPos(operation, body);
  };
  const purchase = (externalId: string, amount: number) =>
    localPos('/transaction/purchase', {
      external_id: externalId,
      requested_amount: amount,
      currency: 'EUR',
      wait_seconds: 30,
    });

  beforeAll(async () => {
    rig = await startLocalModeRig({ clock: agentClock, logLevel: 'info' });
    ({ relay, terminal, pos, link, port, logged } = rig);
    agent = await rig.start();
    await until('the link up', () => agent.link.connected);
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('turns on from the fleet: a POS pays over HTTPS with the relay’s trust answer; off closes the port', async () => {
    expect(agent.local).toBeUndefined();
    expect(await listening(port)).toBe(false);

    await setLocalApi({ enabled: true, listen: { host: '127.0.0.1', port } });
    await until('listening', () => agent.local?.api !== undefined);
    const client = new PosClient({
      baseUrl: relay.baseUrl,
      ...pos,
      terminalId: terminal.terminal_id,
      journal: new MemoryJournal(),
      waitSeconds: 10,
    });
    await until('the trust answer names the port', async () => {
      trust = await client.api.localTrust(terminal.terminal_id);
      return trust.port === port;
    });
    expect(trust).toMatchObject({
      serverName: localDnsName(terminal.terminal_id),
    });
    expect(trust.baseUrls[0]).toBe(`https://127.0.0.1:${port}/pos`);
    await client.close();

    const local = new PosClient({
      baseUrl: relay.baseUrl,
      ...pos,
      terminalId: terminal.terminal_id,
      journal: new MemoryJournal(),
      waitSeconds: 10,
      local: { baseUrl: trust.baseUrls[0]!, ca: trust.ca, prefer: 'local' },
    });
    try {
      const paid = await local.pay({ requested_amount: 700, currency: 'EUR' });
      expect(paid).toMatchObject({ success: true });
      // Decided by the agent: its journal holds the record under the pair's id.
      expect(agent.journal.localByExternalId(paid.externalId)?.txn.id).toBe(paid.transaction.id);
      expect(await paid.settled).toMatchObject({
        status: 'settled',
        transaction: { state: 'CONFIRMED' },
      });
    } finally {
      await local.close();
    }

    await setLocalApi({ enabled: false, listen: { host: '127.0.0.1', port } });
    await until('closed', () => agent.local?.api === undefined);
    expect(await listening(port)).toBe(false);
    // The engine stays for what it made: its reports and timers still need it.
    expect(agent.local?.engine).toBeDefined();
  });

  it('a transaction stays with whoever made it when local mode is turned on or off', async () => {
    const inForce = () => rig.inForce();
    const cloudPurchase = (externalId: string) =>
      cloudPos('/transaction/purchase', {
        external_id: externalId,
        requested_amount: 800,
        currency: 'EUR',
        wait_seconds: 30,
      });
    await inForce();
    const before = await cloudPurchase('made-before-on');
    expect(before.body.transaction.state).toBe('AWAITING_CONFIRM');
    expect(agent.local?.engine.get(terminal.terminal_id, 'made-before-on')).toBeUndefined();

    await setLocalApi({ enabled: true, listen: { host: '127.0.0.1', port } });
    await until('listening', () => agent.local?.api !== undefined);
    await inForce();
    // Made by the relay: confirmed by it, not sent to an agent that holds no record of it.
    const confirmedBefore = await cloudPos('/transaction/confirm', {
      external_id: 'made-before-on',
      result_code: 'SUCCESS',
    });
    expect([confirmedBefore.status, confirmedBefore.body.transaction?.state]).toEqual([
      200,
      'CONFIRMED',
    ]);
    const during = await cloudPurchase('made-while-on');
    expect(during.body.transaction.state).toBe('AWAITING_CONFIRM');
    expect(agent.local?.engine.get(terminal.terminal_id, 'made-while-on')).toBeDefined();

    await setLocalApi({ enabled: false, listen: { host: '127.0.0.1', port } });
    await until('closed', () => agent.local?.api === undefined);
    await inForce();
    // Held by the agent: still decided by it, so its record and the relay's agree.
    const confirmedDuring = await cloudPos('/transaction/confirm', {
      external_id: 'made-while-on',
      result_code: 'SUCCESS',
    });
    expect(confirmedDuring.body.transaction?.state).toBe('CONFIRMED');
    expect(agent.local?.engine.get(terminal.terminal_id, 'made-while-on')?.txn.state).toBe(
      'CONFIRMED',
    );
  });

  it('refuses a create beyond each bound while the link is down, journals nothing, and takes it once the link is back', async () => {
    await setLocalApi({
      enabled: true,
      listen: { host: '127.0.0.1', port },
      while_unreachable: {
        max_amount: 1000,
        max_pending_count: 2,
        max_pending_total: 1500,
        max_pending_age_seconds: 60,
      },
    });
    await until(
      'the bounds in force',
      () => agent.localApi.settings.while_unreachable.max_amount === 1000,
    );
    await until('listening', () => agent.local?.api !== undefined);
    await until('nothing waits', () => agent.journal.localBacklog().count === 0);
    link.cut();
    await until('the link down', () => !agent.link.connected);
    expect(agent.relayReachable()).toBe(false);

    const refused = async (externalId: string, amount: number, bound: string) => {
      const answer = await purchase(externalId, amount);
      expect(answer.status).toBe(400);
      expect(answer.body.error.code).toBe('LOCAL_LIMIT_REACHED');
      expect(answer.body.error.description).toContain(`local_api.while_unreachable.${bound}`);
      expect(agent.journal.localByExternalId(externalId)).toBeUndefined();
      return answer.body.error.description as string;
    };

    expect(await refused('over-amount', 1001, 'max_amount')).toContain('max_amount is 1000');
    expect((await purchase('first', 600)).body.transaction.result_code).toBe('SUCCESS');

    offsetMs = 61_000;
    await refused('too-old', 100, 'max_pending_age_seconds');
    offsetMs = 0;

    await refused('over-total', 1000, 'max_pending_total');
    expect((await purchase('second', 500)).body.transaction.result_code).toBe('SUCCESS');
    await refused('over-count', 100, 'max_pending_count');

    // The local status says what waits and that the relay is out of reach; the relay says
    // the terminal is not connected.
    const localStatus = await localPos('/terminal/status', {});
    expect(localStatus.body.status).toMatchObject({
      connected: true,
      relay_reachable: false,
      local_pending_count: 2,
      local_pending_total: 1100,
    });
    expect((await cloudPos('/terminal/status', {})).body.status).toMatchObject({
      connected: false,
    });

    link.restore();
    await until('forwarded', () => agent.journal.localBacklog().count === 0);
    await until('the relay heard the backlog is empty', async () => {
      const { status } = (await cloudPos('/terminal/status', {})).body;
      return status.local_pending_count === 0 && status.connected === true;
    });
    expect((await cloudPos('/terminal/status', {})).body.status).toMatchObject({
      relay_reachable: true,
      local_pending_total: 0,
    });
    // Caught up: a terminal status event says so.
    const events = await post(
      relay.baseUrl,
      'v1',
      '/event/list',
      { filter: { terminal_id: terminal.terminal_id }, limit: 1000 },
      relay.account,
    );
    const statuses = (events.body.events as Array<{ type: string; data: Record<string, unknown> }>)
      .map((event) => event.data)
      .filter((data) => data.local_pending_count !== undefined);
    expect(statuses.at(-1)).toMatchObject({ local_pending_count: 0 });

    expect((await localPos('/terminal/status', {})).body.status).toMatchObject({
      relay_reachable: true,
      local_pending_count: 0,
    });
    // The same creates pass with the relay in reach.
    for (const [externalId, amount] of [
      ['over-amount', 1001],
      ['over-count', 100],
    ] as const) {
      const answer = await purchase(externalId, amount);
      expect(answer.status).toBe(200);
      expect(answer.body.transaction.result_code).toBe('SUCCESS');
    }
  });

  it('a simulated terminal made with --local-api pays through its local address', async () => {
    const simPort = await freePort();
    const printed: string[] = [];
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      printed.push(String(chunk));
      return true;
    });
    try {
      await runSimulator([
        'create',
        '--local-api',
        `127.0.0.1:${simPort}`,
        '--json',
        '--base-url',
        relay.baseUrl,
        '--username',
        relay.account.username,
        '--password',
        relay.account.password,
      ]);
    } finally {
      write.mockRestore();
    }
    const sim = SimulatorCreateResponse.parse(JSON.parse(printed.join('')));
    const simPos = new PosClient({
      baseUrl: relay.baseUrl,
      username: sim.username,
      password: sim.password,
      terminalId: sim.terminal_id,
      journal: new MemoryJournal(),
      waitSeconds: 10,
    });
    let simTrust: LocalTrust | undefined;
    await until('the simulator’s certificate', async () => {
      simTrust = await simPos.api.localTrust(sim.terminal_id);
      return simTrust.port === simPort;
    });
    await simPos.close();
    await until('listening', () => listening(simPort));
    const local = new PosClient({
      baseUrl: relay.baseUrl,
      username: sim.username,
      password: sim.password,
      terminalId: sim.terminal_id,
      journal: new MemoryJournal(),
      waitSeconds: 10,
      local: { baseUrl: `https://127.0.0.1:${simPort}/pos`, ca: simTrust!.ca, prefer: 'local' },
    });
    try {
      const paid = await local.pay({ requested_amount: 900, currency: 'EUR' });
      expect(paid.success).toBe(true);
      expect(local.api.nextPath).toBe('local');
      expect(await paid.settled).toMatchObject({ status: 'settled' });
      // Forwarded: the relay shows it, made locally.
      await until('forwarded', async () => {
        const got = await post(
          relay.baseUrl,
          'v1',
          '/transaction/get',
          { terminal_id: sim.terminal_id, external_id: paid.externalId },
          relay.account,
        );
        return got.body?.transaction?.made_locally === true;
      });
    } finally {
      await local.close();
    }
  });

  it('a port in use is logged and tried again, never a crash; it listens once the port is free', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const takenPort = (taken.address() as net.AddressInfo).port;
    logged.length = 0;
    await setLocalApi({ enabled: true, listen: { host: '127.0.0.1', port: takenPort } });
    await until('the refusal logged', () =>
      logged.some((line) => line.includes('the port is in use') && line.includes('EADDRINUSE')),
    );
    expect(agent.local?.api).toBeUndefined();
    expect(agent.link.connected).toBe(true);
    await new Promise((resolve) => taken.close(resolve));
    await until('listening once free', () => agent.local?.api?.port === takenPort);
    await setLocalApi({ enabled: false });
    await until('closed', () => agent.local?.api === undefined);
  });

  it('an update does not switch while a local payment waits to be forwarded, and does once it is forwarded', async () => {
    await setLocalApi({ enabled: true, listen: { host: '127.0.0.1', port } });
    await until('listening', () => agent.local?.api?.port === port);
    await until('nothing waits', () => agent.journal.localBacklog().count === 0);

    const dir = tempDir('update-forward');
    const keys = generateReleaseKeyPair();
    const credential = { username: 'agent-update', password: 'agent-update-secret' };
    const archives = await serveArchives(credential);
    const root = path.join(dir, 'root');
    fs.mkdirSync(root);
    fs.writeFileSync(path.join(root, 'release-key.pem'), keys.publicKeyPem);
    for (const version of ['1.0.0', '1.1.0']) {
      archives.archives.set(
        version,
        await buildRelease(dir, { version, privateKeyPem: keys.privateKeyPem }),
      );
    }
    await installFirst(root, archives.archives.get('1.0.0')!, '1.0.0', keys.publicKeyPem);
    const statuses: UpdateStatusMessage[] = [];
    const restarts: string[] = [];
    const updater = new Updater({
      config: UpdateConfig.parse({
        root,
        public_key: path.join(root, 'release-key.pem'),
        relay: archives.url,
      }),
      running: '1.0.0',
      credential,
      health: async () => [],
      // As update-wiring.ts gives them.
      idle: () => agent.transactionState === 'READY',
      unforwarded: () => agent.journal.localBacklog().count,
      publish: (status) => void statuses.push(status),
      restart: (reason) => {
        restarts.push(reason);
        return new Promise<void>(() => {});
      },
      logger: pino({ level: 'silent' }),
      clock: systemClock,
      timers: systemTimers,
    });
    try {
      link.cut();
      await until('the link down', () => !agent.link.connected);
      const paid = await purchase('before-update', 300);
      expect(paid.body.transaction.result_code).toBe('SUCCESS');
      expect(agent.journal.localBacklog().count).toBe(1);

      updater.start();
      updater.order({ order_id: 'update-forward-1', version: '1.1.0' });
      await until('the update waits for forwarding', () =>
        statuses.some((s) => s.phase === 'waiting_to_forward'),
      );
      expect(restarts).toEqual([]);
      expect(fs.readlinkSync(path.join(root, 'current'))).toBe(path.join('releases', '1.0.0'));

      link.restore();
      await until('forwarded', () => agent.journal.localBacklog().count === 0);
      await until('switched', () => restarts.length === 1, 1500);
      const phases = statuses.map((s) => s.phase);
      expect(phases.indexOf('switching')).toBeGreaterThan(phases.indexOf('waiting_to_forward'));
      expect(fs.readlinkSync(path.join(root, 'current'))).toBe(path.join('releases', '1.1.0'));
    } finally {
      updater.close();
      await archives.close();
    }
  });
});
