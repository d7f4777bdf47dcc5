/**
 * The relay's first start on a store: the default account, and its credential, either the
 * configured one (`TPS_ACCOUNT_USERNAME` / `TPS_ACCOUNT_PASSWORD`) or one generated and
 * shown once.
 */
import type { SimulatorCreateResponse } from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import type { CloudConfig } from '../config.js';
import { cohortOf, newAccountId, newSecret, newUsername } from '../ids.js';
import type { Store } from '../store/store.js';
import { hashGeneratedSecret, hashSecret, verifySecret } from './secrets.js';

/** The setting that names the default account: any read of it also shows the store answers. */
export const ACCOUNT_SETTING = 'default_account_id';

export interface Bootstrap {
  accountId: string;
  /** The event subject that covers every terminal of the account. */
  cohortId: string;
  /** Generated at first start; shown once. */
  accountCredential?: { username: string; password: string };
  /** Created at first start; shown once. */
  simulator?: SimulatorCreateResponse;
  /**
   * Account credentials removed because TPS_ACCOUNT_USERNAME names another: the one
   * generated at first start, or a username configured before.
   */
  replaced: string[];
}

export async function bootstrapAccount(
  store: Store,
  config: Pick<CloudConfig, 'accountUsername' | 'accountPassword'>,
  clock: Clock,
): Promise<Bootstrap> {
  const now = clock.now().toISOString();
  let accountId = await store.getSetting(ACCOUNT_SETTING);
  let firstStart = false;
  if (!accountId) {
    // Relays started together on a new store each propose an account; one is kept.
    const candidate = newAccountId();
    await store.ensureAccount(candidate, now);
    accountId = await store.claimSetting(ACCOUNT_SETTING, candidate);
    firstStart = accountId === candidate;
  }
  const bootstrap: Bootstrap = { accountId, cohortId: cohortOf(accountId), replaced: [] };
  if (config.accountUsername && config.accountPassword) {
    const existing = await store.findCredential(config.accountUsername);
    if (existing && existing.accountId !== accountId) {
      throw new Error(`TPS_ACCOUNT_USERNAME ${config.accountUsername} belongs to another account`);
    }
    // The same password keeps its stored hash: what was signed with the credential (a
    // console session) stays valid across restarts; a new password ends it.
    const unchanged = existing && (await verifySecret(config.accountPassword, existing.secretHash));
    if (!unchanged) {
      await store.putCredential({
        username: config.accountUsername,
        secretHash: await hashSecret(config.accountPassword),
        accountId,
        createdAt: now,
      });
    }
    // The configured username is the account's credential: any other account-wide one
    // (generated at first start, or an earlier username) would otherwise stay valid.
    for (const other of await store.listCredentials(accountId)) {
      if (other.terminalId === undefined && other.username !== config.accountUsername) {
        if (await store.deleteCredential(other.username)) bootstrap.replaced.push(other.username);
      }
    }
  } else if (firstStart) {
    const credential = { username: newUsername(), password: newSecret() };
    await store.putCredential({
      username: credential.username,
      secretHash: hashGeneratedSecret(credential.password),
      accountId,
      createdAt: now,
    });
    bootstrap.accountCredential = credential;
  }
  return bootstrap;
}
