/**
 * Each account's kind and whether it is disabled, as every sign-in needs them: read from
 * the store, kept a short while, and forgotten at once when the account changes here or,
 * through the change bus, on another relay (docs/tenants.md, "Disabling an account").
 */
import { BoundedMap } from '../../common/bounded-map.js';
import type { AccountRecord } from '../store/records.js';
import type { Store } from '../store/store.js';

/** As long as a credential is kept (authenticator.ts): a missed notice lasts no longer. */
export const ACCOUNT_TTL_MS = 10_000;
const ACCOUNTS_KEPT = 10_000;

export class AccountStandings {
  private readonly kept = new BoundedMap<
    string,
    { account: AccountRecord | undefined; readAt: number }
  >(ACCOUNTS_KEPT);

  constructor(
    private readonly store: Pick<Store, 'getAccount'>,
    private readonly now: () => number = () => performance.now(),
  ) {}

  async of(accountId: string): Promise<AccountRecord | undefined> {
    const now = this.now();
    const known = this.kept.get(accountId);
    if (known && now - known.readAt < ACCOUNT_TTL_MS) return known.account;
    const account = await this.store.getAccount(accountId);
    this.kept.set(accountId, { account, readAt: now });
    return account;
  }

  forget(accountId: string): void {
    this.kept.delete(accountId);
  }

  forgetAll(): void {
    this.kept.clear();
  }
}
