/**
 * Store conformance: what the store keeps beside transactions (terminal status and its
 * events, the event log and its retention, credentials, webhooks, settings), and all of
 * it across a restart.
 */
import { expect, it } from 'vitest';
import { NATIVE_READER_CAPABILITIES } from '../../../protocol/index.js';
import {
  NOW,
  start,
  terminalRecord,
  transactionRecord,
  withTerminal,
  type StoreFactory,
} from './store-fixtures.js';

export function recordCases(factory: StoreFactory): void {
  it('merges terminal readings, and writes a status event only for a real change', async () => {
    const store = await withTerminal(factory);
    const later = '2026-11-21T12:00:05.000Z';
    const event = await store.updateTerminalStatus('t-1', { battery_percentage: 42 }, later, 'e1');
    expect(event).toMatchObject({
      id: 'e1',
      accountId: 'acct-1',
      subject: 't-1',
      kind: 'TerminalStatus',
      time: later,
      data: {
        terminal_id: 't-1',
        battery_percentage: 42,
        transaction_state: 'READY',
        updated_at: later,
      },
    });
    expect(
      await store.updateTerminalStatus('t-1', { battery_percentage: 42 }, later, 'e2'),
    ).toBeUndefined();
    expect((await store.getTerminal('t-1'))?.status.battery_percentage).toBe(42);
    expect(await store.updateTerminalStatus('t-404', { connected: true }, later, 'e3')).toBe(
      undefined,
    );
    const all = await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 });
    expect(all.map((e) => e.id)).toEqual(['e1']);
    await store.close();
  });

  it("keeps what a terminal's card reader can do beside its other capabilities", async () => {
    const store = await withTerminal(factory);
    const zvt = { ...NATIVE_READER_CAPABILITIES, protocol: 'zvt' as const, cashback: false };
    await store.setReaderCapabilities('t-1', zvt);
    expect((await store.getTerminal('t-1'))?.capabilities).toEqual({
      printer: true,
      battery: true,
      reader: zvt,
    });
    await store.setReaderCapabilities('t-1', undefined);
    expect((await store.getTerminal('t-1'))?.capabilities).toEqual({
      printer: true,
      battery: true,
    });
    await store.setReaderCapabilities('t-404', zvt);
    expect(await store.getTerminal('t-404')).toBeUndefined();
    await store.close();
  });

  it('appends events with a change, in order, and reads them by account, subject and kind', async () => {
    const store = await withTerminal(factory);
    await store.createTerminal(terminalRecord('t-2'));
    const change = (terminalId: string, externalId: string, id: string) =>
      store.changeTransaction({ terminalId, externalId }, () => {
        const write = transactionRecord(terminalId, externalId, id);
        return {
          write,
          events: [
            {
              id: `ev-${id}`,
              accountId: 'acct-1',
              subject: terminalId,
              kind: 'Transaction' as const,
              time: NOW,
              data: write.txn,
            },
          ],
          result: null,
        };
      });
    await Promise.all([
      change('t-1', 'a', 'txn-a'),
      change('t-2', 'b', 'txn-b'),
      change('t-1', 'c', 'txn-c'),
    ]);
    const refused = store.changeTransaction({ terminalId: 't-1', externalId: 'd' }, () => {
      throw new Error('no');
    });
    await expect(refused).rejects.toThrow();
    // Changes made at once commit in some order (a shared store runs them in parallel):
    // the log is in the order of its positions, whichever that is.
    const all = await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 });
    expect(all.map((e) => e.id).sort()).toEqual(['ev-txn-a', 'ev-txn-b', 'ev-txn-c']);
    const positions = all.map((e) => e.position);
    expect([...positions].sort((x, y) => x - y)).toEqual(positions);
    expect(new Set(positions).size).toBe(3);
    const t1 = await store.readEvents({
      accountId: 'acct-1',
      after: 0,
      subject: 't-1',
      limit: 10,
    });
    expect(t1.map((e) => e.id)).toEqual(all.filter((e) => e.subject === 't-1').map((e) => e.id));
    expect(t1.map((e) => e.id).sort()).toEqual(['ev-txn-a', 'ev-txn-c']);
    const afterFirst = await store.readEvents({
      accountId: 'acct-1',
      after: positions[0]!,
      limit: 1,
    });
    expect(afterFirst.map((e) => e.id)).toEqual([all[1]!.id]);
    expect(
      await store.readEvents({
        accountId: 'acct-1',
        after: 0,
        kind: 'TerminalStatus',
        limit: 10,
      }),
    ).toEqual([]);
    expect(
      await store.readEvents({ accountId: 'acct-1', after: 0, kind: null, limit: 10 }),
    ).toEqual([]);
    expect(await store.readEvents({ accountId: 'acct-2', after: 0, limit: 10 })).toEqual([]);
    expect(await store.countEvents({ accountId: 'acct-1', after: 0, subject: 't-1' })).toBe(2);
    expect((await store.eventBounds()).latest).toBe(positions[2]);
    await store.close();
  });

  it('trims old events below what is still needed, and never reuses a position', async () => {
    const store = await withTerminal(factory);
    const old = '2026-11-01T00:00:00.000Z';
    for (const id of ['e1', 'e2', 'e3']) {
      await store.updateTerminalStatus('t-1', { screen_message: id }, old, id);
    }
    const [e1, e2, e3] = await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 });
    // e3 is still needed (a receiver has not had it): only e1 and e2 go.
    expect(await store.trimEvents(NOW, e3!.position)).toBe(e2!.position);
    expect(
      (await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 })).map((e) => e.id),
    ).toEqual(['e3']);
    expect(await store.eventBounds()).toEqual({
      latest: e3!.position,
      trimmedThrough: e2!.position,
    });
    expect(await store.trimEvents(NOW, Number.MAX_SAFE_INTEGER)).toBe(e3!.position);
    const next = await store.updateTerminalStatus('t-1', { screen_message: 'e4' }, NOW, 'e4');
    expect(next!.position).toBeGreaterThan(e3!.position);
    expect(e1!.position).toBeLessThan(e2!.position);
    await store.close();
  });

  it("grows a terminal's credential revision with each change of its POS credentials", async () => {
    const store = await withTerminal(factory);
    expect(await store.terminalCredentials('t-1')).toEqual({ revision: 0, credentials: [] });
    const pos = { accountId: 'acct-1', terminalId: 't-1', createdAt: NOW };
    await store.putCredential({ ...pos, username: 'pos-b', secretHash: 'sha256$s$1' });
    await store.putCredential({ ...pos, username: 'pos-a', secretHash: 'sha256$s$2' });
    // The account's own credential is no terminal's.
    await store.putCredential({
      username: 'acct',
      secretHash: 'x',
      accountId: 'acct-1',
      createdAt: NOW,
    });
    expect(await store.terminalCredentials('t-1')).toEqual({
      revision: 2,
      credentials: [
        { username: 'pos-a', secretHash: 'sha256$s$2' },
        { username: 'pos-b', secretHash: 'sha256$s$1' },
      ],
    });
    await store.putCredential({ ...pos, username: 'pos-b', secretHash: 'sha256$s$3' });
    expect(await store.deleteCredential('pos-a')).toBe(true);
    expect(await store.deleteCredential('pos-a')).toBe(false);
    expect(await store.deleteCredential('acct')).toBe(true);
    expect(await store.terminalCredentials('t-1')).toEqual({
      revision: 4,
      credentials: [{ username: 'pos-b', secretHash: 'sha256$s$3' }],
    });
    await store.close();
  });

  it('searches newest first by creation then id, time-ordered and pair-named ids alike', async () => {
    const store = await withTerminal(factory);
    // A pair-named id sorts anywhere among time-ordered ones; creation decides.
    const rows: Array<[string, string, string]> = [
      ['o-1', 'txn-01KAAAAAAAAAAAAAAAAAAAAAAA', '2026-11-21T12:00:01.000Z'],
      ['o-2', 'txn-ZZZZZZZZZZZZZZZZZZZZZZZZZZ', '2026-11-21T12:00:02.000Z'],
      ['o-3', 'txn-01KBBBBBBBBBBBBBBBBBBBBBBB', '2026-11-21T12:00:03.000Z'],
      ['o-4', 'txn-0000000000000000000000000A', '2026-11-21T12:00:04.000Z'],
      ['o-5', 'txn-0000000000000000000000000B', '2026-11-21T12:00:04.000Z'],
    ];
    for (const [externalId, id, createdAt] of rows) {
      const record = transactionRecord('t-1', externalId, id);
      record.txn.created_at = createdAt;
      await store.changeTransaction({ terminalId: 't-1', externalId }, () => ({
        write: record,
        result: undefined,
      }));
    }
    const page = (beforeId?: string) =>
      store.searchTransactions({
        accountId: 'acct-1',
        limit: 2,
        ...(beforeId ? { beforeId } : {}),
      });
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 4; i++) {
      const rows = await page(cursor);
      seen.push(...rows.map((r) => r.txn.external_id));
      if (rows.length < 2) break;
      cursor = rows.at(-1)!.txn.id;
    }
    expect(seen).toEqual(['o-5', 'o-4', 'o-3', 'o-2', 'o-1']);
    // A record replaced with another creation time (a mirror taking the agent's) moves.
    const moved = transactionRecord('t-1', 'o-1', rows[0]![1]);
    moved.txn.created_at = '2026-11-21T12:00:09.000Z';
    await store.changeTransaction({ terminalId: 't-1', externalId: 'o-1' }, () => ({
      write: { ...moved, version: 2 },
      result: undefined,
    }));
    expect((await page()).map((r) => r.txn.external_id)).toEqual(['o-1', 'o-5']);
    await store.close();
  });

  it('keeps agent credentials', async () => {
    const store = await withTerminal(factory);
    expect(await store.findAgentCredential('t-1')).toBeUndefined();
    await store.putAgentCredential('t-1', 'scrypt$a', NOW);
    await store.putAgentCredential('t-1', 'scrypt$b', NOW);
    expect(await store.findAgentCredential('t-1')).toBe('scrypt$b');
    expect(await store.deleteAgentCredential('t-1')).toBe(true);
    expect(await store.findAgentCredential('t-1')).toBeUndefined();
    expect(await store.deleteAgentCredential('t-1')).toBe(false);
    await store.close();
  });

  it('keeps webhooks and their delivery state', async () => {
    const store = await withTerminal(factory);
    const hook = {
      id: 'wh-1',
      accountId: 'acct-1',
      url: 'https://example.test/hook',
      filter: { subject: { eq: 't-1' } },
      mode: 'structured' as const,
      secret: 'whsec_x',
      enabled: true,
      cursor: 0,
      createdAt: NOW,
    };
    await store.createWebhook(hook);
    await store.updateWebhook('wh-1', { cursor: 5, failingSince: NOW, lastError: 'HTTP 500' });
    expect(await store.getWebhook('wh-1')).toEqual({
      ...hook,
      cursor: 5,
      failingSince: NOW,
      lastError: 'HTTP 500',
    });
    await store.updateWebhook('wh-1', { failingSince: undefined, lastError: undefined });
    expect(await store.getWebhook('wh-1')).toEqual({ ...hook, cursor: 5 });
    expect((await store.listWebhooks('acct-1')).map((h) => h.id)).toEqual(['wh-1']);
    expect(await store.listWebhooks('acct-2')).toEqual([]);
    await store.deleteWebhook('wh-1');
    expect(await store.getWebhook('wh-1')).toBeUndefined();
    await store.close();
  });

  it('keeps credentials as given and settings by key', async () => {
    const store = await withTerminal(factory);
    const credential = {
      username: 'u1',
      secretHash: 'scrypt$x',
      accountId: 'acct-1',
      terminalId: 't-1',
      createdAt: NOW,
    };
    await store.putCredential(credential);
    expect(await store.findCredential('u1')).toEqual(credential);
    expect(await store.findCredential('nobody')).toBeUndefined();
    const account = { username: 'u0', secretHash: 'sha256$y', accountId: 'acct-1', createdAt: NOW };
    await store.putCredential(account);
    expect(await store.listCredentials('acct-1')).toEqual([account, credential]);
    expect(await store.listCredentials('acct-2')).toEqual([]);
    expect(await store.deleteCredential('u1')).toBe(true);
    expect(await store.deleteCredential('u1')).toBe(false);
    expect(await store.findCredential('u1')).toBeUndefined();
    expect(await store.listCredentials('acct-1')).toEqual([account]);
    await store.putSetting('k', 'v1');
    await store.putSetting('k', 'v2');
    expect(await store.getSetting('k')).toBe('v2');
    await store.close();
  });

  if (factory.reopen) {
    const reopen = factory.reopen;
    it('keeps everything across a restart', async () => {
      const store = await withTerminal(factory);
      await store.changeTransaction({ terminalId: 't-1', externalId: 'kept' }, () => ({
        write: transactionRecord('t-1', 'kept', 'txn-kept'),
        commands: [start('cmd-kept', 'txn-kept')],
        result: null,
      }));
      const again = await reopen(store);
      expect((await again.getTransaction('t-1', 'kept'))?.txn.id).toBe('txn-kept');
      expect((await again.pendingCommands()).map((p) => p.command.command_id)).toEqual([
        'cmd-kept',
      ]);
      expect((await again.listTerminals()).map((t) => t.id)).toEqual(['t-1']);
      await again.close();
    });
  }
}
