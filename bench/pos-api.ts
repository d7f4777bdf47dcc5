/**
 * The relay's API as a POS calls it, over an undici dispatcher (a keep-alive Pool):
 * each call answers its status, parsed body, latency and the time it arrived.
 */
import { performance } from 'node:perf_hooks';
import type { Dispatcher } from 'undici';
import type { SimulatorCreateResponse, Transaction } from '../protocol/index.js';

export interface Credential {
  username: string;
  password: string;
}

export const basicAuth = (c: Credential) =>
  `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;

/** Wall-clock time in ms with sub-millisecond precision (same clock as Date.now()). */
export const epochNow = () => performance.timeOrigin + performance.now();

export interface Answer<T> {
  status: number;
  body: T | undefined;
  /** From sending the request to having read the whole answer. */
  ms: number;
  /** epochNow() once the whole answer was read. */
  receivedAt: number;
}

export type TransactionAnswer = Answer<{ transaction?: Transaction; error?: { code?: string } }>;

export async function postJson<T>(
  dispatcher: Dispatcher,
  path: string,
  authorization: string,
  body: unknown,
): Promise<Answer<T>> {
  const started = performance.now();
  const response = await dispatcher.request({
    method: 'POST',
    path,
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.body.text();
  const finished = performance.now();
  return {
    status: response.statusCode,
    body: text ? (JSON.parse(text) as T) : undefined,
    ms: finished - started,
    receivedAt: performance.timeOrigin + finished,
  };
}

/** A POS bound to one terminal, with the credential it uses. */
export class Pos {
  private readonly authorization: string;

  constructor(
    private readonly dispatcher: Dispatcher,
    readonly terminalId: string,
    credential: Credential,
  ) {
    this.authorization = basicAuth(credential);
  }

  private call(operation: string, body: Record<string, unknown>): Promise<TransactionAnswer> {
    return postJson(this.dispatcher, `/pos/v1/transaction/${operation}`, this.authorization, {
      terminal_id: this.terminalId,
      ...body,
    });
  }

  purchase(externalId: string, amount: number, waitSeconds: number): Promise<TransactionAnswer> {
    return this.call('purchase', {
      external_id: externalId,
      requested_amount: amount,
      currency: 'EUR',
      options: { wait_seconds: waitSeconds },
    });
  }

  get(externalId: string, waitSeconds: number): Promise<TransactionAnswer> {
    return this.call('get', { external_id: externalId, options: { wait_seconds: waitSeconds } });
  }

  confirm(externalId: string, resultCode = 'SUCCESS'): Promise<TransactionAnswer> {
    return this.call('confirm', { external_id: externalId, result_code: resultCode });
  }
}

/** Creates simulated terminals with the account credential, a few at a time (each hashes a secret). */
export async function createSimulators(
  dispatcher: Dispatcher,
  account: Credential,
  count: number,
  concurrency = 4,
): Promise<SimulatorCreateResponse[]> {
  const created = new Array<SimulatorCreateResponse>(count);
  const authorization = basicAuth(account);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const slot = next++;
      const answer = await postJson<SimulatorCreateResponse>(
        dispatcher,
        '/pos/v1/simulator/create',
        authorization,
        {},
      );
      if (answer.status !== 200 || !answer.body) {
        throw new Error(`simulator/create answered ${answer.status}`);
      }
      created[slot] = answer.body;
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return created;
}
