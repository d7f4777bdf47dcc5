/**
 * Starts a real relay in process for a test: a fresh SQLite file in a temporary data
 * directory, a real HTTP port (0: any free one), silent logs unless TEST_LOG is set.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { expect } from 'vitest';
import { type CloudConfigInput } from '../../cloud/config.js';
import { loadCloudConfig } from '../../cloud/config-settings.js';
import { startRelay, type Relay, type RelayOptions } from '../../cloud/relay.js';
import { AccountCreateResponse, type SimulatorCreateResponse } from '../../protocol/index.js';

export interface TestRelay extends Relay {
  dataDir: string;
  account: { username: string; password: string };
  /** The operator's credential (docs/tenants.md). */
  operator: { username: string; password: string };
  /** Creates a simulated terminal through the API with the account credential. */
  newSimulator(): Promise<SimulatorCreateResponse>;
}

export const TEST_ACCOUNT = { username: 'test-account', password: 'test-account-password' };
export const TEST_OPERATOR = { username: 'test-operator', password: 'test-operator-password' };

export function tempDataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'tps-test-'));
}

export async function startTestRelay(
  overrides: Partial<CloudConfigInput> = {},
  dataDir = tempDataDir(),
  options: RelayOptions = {},
): Promise<TestRelay> {
  const config = loadCloudConfig(
    {},
    {},
    {
      host: '127.0.0.1',
      port: 0,
      dataDir,
      accountUsername: TEST_ACCOUNT.username,
      accountPassword: TEST_ACCOUNT.password,
      operatorUsername: TEST_OPERATOR.username,
      operatorPassword: TEST_OPERATOR.password,
      simulatorDelayMs: 20,
      mqttPort: 0,
      defaultSimulator: false,
      logLevel: process.env.TEST_LOG ? 'debug' : 'silent',
      ...overrides,
    },
  );
  const relay = await startRelay(config, {
    logger: pino({ level: config.logLevel }),
    ...options,
  });
  return Object.assign(relay, {
    dataDir,
    account: TEST_ACCOUNT,
    operator: TEST_OPERATOR,
    async newSimulator() {
      const res = await post(relay.baseUrl, 'v1', '/simulator/create', {}, TEST_ACCOUNT);
      if (res.status !== 200) throw new Error(`simulator/create answered ${res.status}`);
      return res.body as SimulatorCreateResponse;
    },
  });
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export const basicAuth = (c: { username: string; password: string }) =>
  `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;

/** POSTs JSON to an operation as a POS would, and answers status, headers and parsed body. */
export async function post(
  baseUrl: string,
  revision: 'v0' | 'v1',
  operation: string,
  body: unknown,
  credential: { username: string; password: string },
  init: RequestInit = {},
): Promise<ApiResponse> {
  const response = await fetch(`${baseUrl}/${revision}${operation}`, {
    method: 'POST',
    headers: { authorization: basicAuth(credential), 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...init,
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text ? JSON.parse(text) : undefined,
  };
}

/** A POS bound to one simulated terminal. */
export function posFor(
  relay: TestRelay,
  sim: SimulatorCreateResponse,
  revision: 'v0' | 'v1' = 'v1',
) {
  const credential = { username: sim.username, password: sim.password };
  return {
    terminalId: sim.terminal_id,
    credential,
    call: (operation: string, body: Record<string, unknown>) =>
      post(
        relay.baseUrl,
        revision,
        operation,
        { terminal_id: sim.terminal_id, ...body },
        credential,
      ),
  };
}

/**
 * What an engineer checks after installing an agent: its terminal shows connected (read
 * every `everyMs`, within `connectMs`), then a purchase is paid and confirmed through the
 * relay. Answers the purchase's transaction.
 */
export async function payOnceThroughRelay(
  baseUrl: string,
  terminal: { terminal_id: string; username: string; password: string },
  payment: {
    external_id: string;
    requested_amount: number;
    wait_seconds: number;
    connectMs: number;
    everyMs: number;
  },
): Promise<Record<string, unknown>> {
  const { connectMs, everyMs, ...purchase } = payment;
  const pos = (operation: string, body: object) =>
    post(
      baseUrl,
      'v1',
      operation,
      { terminal_id: terminal.terminal_id, ...body },
      { username: terminal.username, password: terminal.password },
    );
  let connected = false;
  for (const deadline = Date.now() + connectMs; !connected && Date.now() < deadline;) {
    connected = (await pos('/terminal/status', {})).body?.status?.connected === true;
    if (!connected) await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  expect(connected, `terminal ${terminal.terminal_id} connected`).toBe(true);
  const paid = await pos('/transaction/purchase', { ...purchase, currency: 'EUR' });
  expect(paid.body.transaction).toMatchObject({
    state: 'AWAITING_CONFIRM',
    result_code: 'SUCCESS',
    total_amount: purchase.requested_amount,
  });
  const confirmed = await pos('/transaction/confirm', {
    external_id: purchase.external_id,
    result_code: 'SUCCESS',
  });
  expect(confirmed.body.transaction.state).toBe('CONFIRMED');
  return paid.body.transaction;
}

/**
 * A merchant account the operator makes on `relay`, with one simulated terminal: its
 * account, account credential and the terminal's id and POS credential.
 */
export async function newMerchant(relay: TestRelay, name: string) {
  const created = await post(relay.baseUrl, 'v1', '/account/create', { name }, relay.operator);
  expect(created.status).toBe(200);
  const { account, credential } = AccountCreateResponse.parse(created.body);
  const simulator = await post(relay.baseUrl, 'v1', '/simulator/create', {}, credential);
  expect(simulator.status).toBe(200);
  const terminal = simulator.body as { terminal_id: string; username: string; password: string };
  return { account, credential, terminal };
}
