/**
 * The operator's operations on accounts (docs/tenants.md): create a merchant account with
 * its first credential (shown once), list and read accounts, disable and enable one. A
 * change is committed first; then this relay forgets what it kept of the account and the
 * change bus tells every other relay to do the same, so a disabled account's credentials
 * and console sessions are refused everywhere at once. Nothing of an account is deleted.
 */
import type {
  AccountCreateRequest,
  AccountCreateResponse,
  AccountView,
} from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import type { ChangeBus } from '../cluster/change-bus.js';
import { ApiError } from '../errors.js';
import { newAccountId, newSecret, newUsername } from '../ids.js';
import type { AccountRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { hashGeneratedSecret } from './secrets.js';

export interface AccountAdminOptions {
  store: Store;
  bus: ChangeBus;
  clock: Clock;
  /** What this relay does when an account changes (the same as for another relay's notice). */
  changed(accountId: string): void;
}

export const accountView = (account: AccountRecord): AccountView => ({
  account_id: account.id,
  kind: account.kind,
  ...(account.name !== undefined ? { name: account.name } : {}),
  created_at: account.createdAt,
  ...(account.disabledAt !== undefined ? { disabled_at: account.disabledAt } : {}),
});

export class AccountAdmin {
  constructor(private readonly options: AccountAdminOptions) {}

  async create(request: AccountCreateRequest): Promise<AccountCreateResponse> {
    const { store, clock } = this.options;
    const now = clock.now().toISOString();
    const account: AccountRecord = {
      id: newAccountId(),
      kind: 'merchant',
      name: request.name,
      createdAt: now,
    };
    await store.createAccount(account);
    const credential = { username: newUsername(), password: newSecret() };
    await store.putCredential({
      username: credential.username,
      secretHash: hashGeneratedSecret(credential.password),
      accountId: account.id,
      createdAt: now,
    });
    return { account: accountView(account), credential };
  }

  async list(): Promise<AccountView[]> {
    return (await this.options.store.listAccounts()).map(accountView);
  }

  async get(accountId: string): Promise<AccountView> {
    return accountView(await this.find(accountId));
  }

  /** Disables a merchant account (the operator's own cannot be: it would lock the relay). */
  async setDisabled(accountId: string, disabled: boolean): Promise<AccountView> {
    const account = await this.find(accountId);
    if (account.kind === 'operator') {
      throw new ApiError('INVALID_REQUEST', "account_id: the operator's account is not disabled");
    }
    const { store, clock, bus, changed } = this.options;
    const at = disabled ? (account.disabledAt ?? clock.now().toISOString()) : undefined;
    await store.setAccountDisabled(accountId, at);
    changed(accountId);
    await bus.announce({ kind: 'account', accountId });
    return accountView({
      ...account,
      ...(at !== undefined ? { disabledAt: at } : { disabledAt: undefined }),
    });
  }

  /** Whether a merchant account of that id exists: what the operator may act for. */
  async isMerchant(accountId: string): Promise<boolean> {
    return (await this.options.store.getAccount(accountId))?.kind === 'merchant';
  }

  private async find(accountId: string): Promise<AccountRecord> {
    const account = await this.options.store.getAccount(accountId);
    if (!account) throw new ApiError('NOT_FOUND', `no account ${accountId}`);
    return account;
  }
}
