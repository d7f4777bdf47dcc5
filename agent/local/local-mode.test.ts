/**
 * When the relay counts as out of reach (docs/local-mode.md, row 18), on a real journal
 * file and the executor with a scripted reader: the link down, or up while a local report
 * waits too long for its acknowledgement; and the bounds that then hold.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { ApiError } from '../../protocol/api-error.js';
import { localApiSettings } from '../../protocol/local-api.js';
import { Executor } from '../executor.js';
import { Journal } from '../journal.js';
import { ScriptedReader } from '../testing/scripted-reader.js';
import { DEFAULT_LOCAL_SETTINGS } from './engine.js';
import { LocalMode } from './local-mode.js';

const TERMINAL = 't-1000000002';
const purchase = (externalId: string, requestedAmount = 100) => ({
  kind: 'PURCHASE' as const,
  request: {
    terminal_id: TERMINAL,
    external_id: externalId,
    requested_amount: requestedAmount,
    currency: 'EUR',
  },
});

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function setup() {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agent-local-mode-'));
  const timers = new ManualTimers(new Date('2026-03-01T12:00:00.000Z'));
  const journal = Journal.open(dataDir, () => timers.clock.now());
  const logger = pino({ level: 'silent' });
  const executor = new Executor({
    journal,
    reader: new ScriptedReader(),
    clock: timers.clock,
    timers,
    logger,
    ack: () => {},
    reported: () => {},
  });
  const link = { connected: true };
  const localMode = new LocalMode({
    terminalId: TERMINAL,
    dataDir,
    journal,
    executor,
    machine: DEFAULT_LOCAL_SETTINGS,
    settings: {
      current: () => localApiSettings({ while_unreachable: { max_pending_count: 1 } }),
      onChange: () => () => {},
    },
    authenticator: { check: async () => ({ ok: false, status: 401 }) },
    readings: { current: {}, update: () => {} },
    linkConnected: () => link.connected,
    sendCertRequest: () => false,
    fixed: {},
    clock: timers.clock,
    timers,
    logger,
    reported: () => {},
  });
  await localMode.start();
  closers.push(async () => {
    await localMode.stop();
    await executor.stop();
    journal.close();
  });
  return { journal, timers, link, localMode, engine: localMode.engine! };
}

function refusal(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('no error thrown');
}

describe('local mode: the relay out of reach', () => {
  it('counts a link that is up but acknowledges nothing for 30 s as out of reach', async () => {
    const { journal, timers, localMode, engine } = await setup();
    engine.create(purchase('first'));
    expect(journal.localBacklog()).toMatchObject({ count: 1, total: 100 });
    expect(localMode.relayReachable()).toBe(true);

    timers.advance(30_001);
    expect(localMode.relayReachable()).toBe(false);
    const refused = refusal(() => engine.create(purchase('second')));
    expect(refused.code).toBe('LOCAL_LIMIT_REACHED');
    expect(refused.message).toContain('local_api.while_unreachable.max_pending_count is 1');
    expect(journal.localByExternalId('second')).toBeUndefined();
    // A repeat of a pair it holds is answered, whatever the bounds.
    expect(engine.create(purchase('first')).txn.external_id).toBe('first');

    // The relay acknowledges: nothing waits, in reach again.
    for (const { seq } of journal.pendingReports()) journal.dropReport(seq);
    expect(journal.localBacklog().count).toBe(0);
    expect(localMode.relayReachable()).toBe(true);
    // The bound no longer holds it back; the reader, still on the first, does.
    expect(refusal(() => engine.create(purchase('second'))).code).toBe('TERMINAL_BUSY');
  });

  it('counts a link that is down as out of reach at once', async () => {
    const { link, localMode, engine } = await setup();
    link.connected = false;
    expect(localMode.relayReachable()).toBe(false);
    expect(localMode.status()).toMatchObject({
      connected: true,
      relay_reachable: false,
      local_pending_count: 0,
      local_pending_total: 0,
    });
    expect(refusal(() => engine.create(purchase('big', 50_001))).message).toContain(
      'max_amount is 50000',
    );
  });
});
