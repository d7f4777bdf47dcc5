/**
 * Conformance of AccountStore (ports/accounts.ts): credentials kept as given, a terminal's
 * POS credentials read with a revision that grows with each change of them, agents'
 * broker credentials.
 */
import { describe, expect, it } from 'vitest';
import { NOW, withTerminal, type StoreFactory } from './store-fixtures.js';

export function accountsConformance(factory: StoreFactory): void {
  describe('accounts and credentials (AccountStore)', () => {
    it('creates accounts of each kind once, lists them oldest first, disables and enables one', async () => {
      const store = await factory.open();
      const merchant = { id: 'acct-m', kind: 'merchant' as const, name: 'Café', createdAt: NOW };
      const operator = { id: 'acct-o', kind: 'operator' as const, createdAt: `${NOW}1` };
      expect(await store.createAccount(merchant)).toBe(true);
      expect(await store.createAccount(operator)).toBe(true);
      expect(await store.createAccount({ ...merchant, name: 'Another' })).toBe(false);
      // Without a name (as the accounts made before names), listed after the others.
      await store.createAccount({ id: 'acct-e', kind: 'merchant', createdAt: `${NOW}2` });
      expect(await store.listAccounts()).toEqual([
        merchant,
        operator,
        { id: 'acct-e', kind: 'merchant', createdAt: `${NOW}2` },
      ]);
      expect(await store.setAccountDisabled('acct-m', `${NOW}3`)).toBe(true);
      expect(await store.getAccount('acct-m')).toEqual({ ...merchant, disabledAt: `${NOW}3` });
      expect(await store.setAccountDisabled('acct-m', undefined)).toBe(true);
      expect(await store.getAccount('acct-m')).toEqual(merchant);
      expect(await store.setAccountDisabled('acct-none', `${NOW}3`)).toBe(false);
      await store.close();
    });

    it("grows its terminals' credential revisions when an account is disabled or enabled", async () => {
      const store = await withTerminal(factory);
      const before = (await store.terminalCredentials('t-1')).revision;
      expect(await store.setAccountDisabled('acct-1', NOW)).toBe(true);
      expect((await store.terminalCredentials('t-1')).revision).toBe(before + 1);
      expect(await store.setAccountDisabled('acct-1', undefined)).toBe(true);
      expect((await store.terminalCredentials('t-1')).revision).toBe(before + 2);
      expect(await store.getAccount('acct-none')).toBeUndefined();
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
      const account = {
        username: 'u0',
        secretHash: 'sha256$y',
        accountId: 'acct-1',
        createdAt: NOW,
      };
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
  });
}
