/**
 * The POS process (`tps pos purchase`) killed with SIGKILL at each step of a payment,
 * then `tps pos recover` started on the same journal: every payment ends CONFIRMED or
 * COMMITTED exactly once, the restarted client reports the true result, and the relay
 * holds exactly one transaction for it. The proxy between them shows where the payment
 * is, and holds it there for the kill.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteJournal } from '../client/index.js';
import { FaultyProxy, type Exchange, type Fault } from './support/faulty-proxy.js';
import { spawnTps } from './support/relay-process.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
beforeAll(async () => {
  // Slow enough that a create is parked in its long poll for a while.
  relay = await startTestRelay({ simulatorDelayMs: 400 });
});
afterAll(async () => {
  await relay.close();
});

interface Step {
  name: string;
  operation: '/transaction/purchase' | '/transaction/confirm';
  fault: Fault;
  /** Kill when the request reaches the proxy, when the relay's answer does, or a while after the request. */
  killAt: 'request' | 'response' | 'parked';
  /** What becomes of the held request after the kill. */
  then?: 'cut' | 'release';
  amount: number;
  result: string;
  final: 'CONFIRMED' | 'COMMITTED';
}

const STEPS: Step[] = [
  {
    name: 'journaled; the create never reaches the relay',
    operation: '/transaction/purchase',
    fault: 'stall-request',
    killAt: 'request',
    then: 'cut',
    amount: 1000,
    result: 'SUCCESS',
    final: 'CONFIRMED',
  },
  {
    name: 'journaled; the create reaches the relay after the kill',
    operation: '/transaction/purchase',
    fault: 'stall-request',
    killAt: 'request',
    then: 'release',
    amount: 1000,
    result: 'SUCCESS',
    final: 'CONFIRMED',
  },
  {
    name: 'the create is parked in its long poll',
    operation: '/transaction/purchase',
    fault: 'pass',
    killAt: 'parked',
    amount: 1000,
    result: 'SUCCESS',
    final: 'CONFIRMED',
  },
  {
    name: 'the relay answered the result; the answer never arrives',
    operation: '/transaction/purchase',
    fault: 'stall-response',
    killAt: 'response',
    amount: 1000,
    result: 'SUCCESS',
    final: 'CONFIRMED',
  },
  {
    name: 'the result is journaled; the confirm never reaches the relay',
    operation: '/transaction/confirm',
    fault: 'stall-request',
    killAt: 'request',
    then: 'cut',
    amount: 1000,
    result: 'SUCCESS',
    final: 'CONFIRMED',
  },
  {
    name: 'the relay stored the confirm; the answer never arrives',
    operation: '/transaction/confirm',
    fault: 'stall-response',
    killAt: 'response',
    amount: 1000,
    result: 'SUCCESS',
    final: 'CONFIRMED',
  },
  {
    name: 'a decline is journaled; its confirm never reaches the relay',
    operation: '/transaction/confirm',
    fault: 'stall-request',
    killAt: 'request',
    then: 'cut',
    amount: 100006,
    result: 'DECLINED_BY_ISSUER',
    final: 'COMMITTED',
  },
];

function run(args: string[], env: Record<string, string>) {
  const child = spawnTps(['pos', ...args], env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as string | null,
    stdout,
    stderr,
  }));
  return { child, exited };
}

function relayTransactions(terminalId: string): Array<{ external_id: string; state: string }> {
  const db = new Database(path.join(relay.dataDir, 'relay.sqlite'), { readonly: true });
  try {
    return db
      .prepare('SELECT external_id, state FROM transactions WHERE terminal_id = ?')
      .all(terminalId) as Array<{ external_id: string; state: string }>;
  } finally {
    db.close();
  }
}

// One step after another: run concurrently, the 'reaches the relay after the kill' step
// hung past 60 s under load (not yet understood; each step alone takes about 2 s).
describe('tps pos purchase killed with SIGKILL, then tps pos recover', () => {
  it.each(STEPS)(
    '$name',
    async (step) => {
      const sim = await relay.newSimulator();
      const proxy = await FaultyProxy.start(relay.baseUrl);
      const journal = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tps-crash-')), 'pos.sqlite');
      const env = {
        TPS_USERNAME: relay.account.username,
        TPS_PASSWORD: relay.account.password,
        TPS_TERMINAL_ID: sim.terminal_id,
        TPS_JOURNAL: journal,
      };
      const externalId = `crash-${STEPS.indexOf(step)}`;
      if (step.fault !== 'pass') proxy.plan({ match: step.operation, fault: step.fault });

      const pos = run(
        [
          'purchase',
          '--amount',
          String(step.amount),
          '--currency',
          'EUR',
          '--external-id',
          externalId,
          '--json',
        ],
        { ...env, TPS_BASE_URL: proxy.baseUrl },
      );
      const early = pos.exited.then((r) => {
        throw new Error(`tps pos purchase ended before the kill: ${JSON.stringify(r)}`);
      });
      let held: Exchange;
      if (step.killAt === 'response') {
        held = await Promise.race([proxy.waitFor(step.operation, 'response'), early]);
      } else {
        held = await Promise.race([proxy.waitFor(step.operation, 'request'), early]);
        if (step.killAt === 'parked') await new Promise((resolve) => setTimeout(resolve, 150));
      }
      pos.child.kill('SIGKILL');
      expect((await pos.exited).signal).toBe('SIGKILL');
      if (step.then === 'cut') held.cut();
      if (step.then === 'release') {
        held.release();
        await proxy.waitFor((r) => r.seq === held.request.seq, 'response');
      }

      const recovered = await run(['recover', '--json'], { ...env, TPS_BASE_URL: relay.baseUrl })
        .exited;
      expect(recovered.code, recovered.stderr).toBe(0);
      const report = JSON.parse(recovered.stdout) as Array<{
        external_id: string;
        status: string;
        transaction: { state: string; result_code: string };
      }>;
      expect(report).toMatchObject([
        {
          external_id: externalId,
          status: 'settled',
          transaction: { state: step.final, result_code: step.result },
        },
      ]);

      const read = await post(
        relay.baseUrl,
        'v1',
        '/transaction/get',
        { terminal_id: sim.terminal_id, external_id: externalId },
        relay.account,
      );
      expect(read.body.transaction).toMatchObject({ state: step.final, result_code: step.result });
      const unconfirmed = await post(
        relay.baseUrl,
        'v1',
        '/transaction/unconfirmed',
        { terminal_id: sim.terminal_id },
        relay.account,
      );
      expect(unconfirmed.body.transactions).toEqual([]);
      expect(relayTransactions(sim.terminal_id)).toEqual([
        { external_id: externalId, state: step.final },
      ]);
      const kept = new SqliteJournal(journal);
      expect((await kept.get(sim.terminal_id, externalId))?.phase).toBe('SETTLED');
      await kept.close();
      await proxy.close();
    },
    60_000,
  );
});
