/**
 * The relay's first start on a store (docs/tenants.md, "First start and migration"): the
 * default merchant account and the operator's account, each with its credential, either
 * the configured one (`TPS_ACCOUNT_USERNAME` / `TPS_ACCOUNT_PASSWORD`,
 * `TPS_OPERATOR_USERNAME` / `TPS_OPERATOR_PASSWORD`) or one generated and shown once. A
 * store made before operators existed gets its operator at its first start after the
 * migration, shown once the same way; releases its accounts published become the
 * operator's.
 */
import type { SimulatorCreateResponse } from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import type { CloudConfig } from '../config.js';
import { cohortOf, newAccountId, newSecret, newUsername } from '../ids.js';
import type { AccountRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { hashGeneratedSecret, hashSecret, verifySecret } from './secrets.js';

/** The setting that names the default account: any read of it also shows the store answers. */
export const ACCOUNT_SETTING = 'default_account_id';
/** The setting that names the operator's account. */
export const OPERATOR_SETTING = 'operator_account_id';

type Credential = { username: string; password: string };

export interface Bootstrap {
  accountId: string;
  /** The event subject that covers every terminal of the account. */
  cohortId: string;
  /** Generated at first start; shown once. */
  accountCredential?: Credential;
  operatorAccountId: string;
  /** Generated when the operator's account was made; shown once. */
  operatorCredential?: Credential;
  /** Created at first start; shown once. */
  simulator?: SimulatorCreateResponse;
  /**
   * Account-wide credentials removed because a configured username names another: the one
   * generated at first start, or a username configured before.
   */
  replaced: string[];
  /** The account credentials this relay's environment sets, and their accounts. */
  configured: Array<{ accountId: string; username: string }>;
}

export async function bootstrapAccount(
  store: Store,
  config: Pick<
    CloudConfig,
    'accountUsername' | 'accountPassword' | 'operatorUsername' | 'operatorPassword'
  >,
  clock: Clock,
): Promise<Bootstrap> {
  const merchant = await bootstrapOne(
    store,
    { setting: ACCOUNT_SETTING, kind: 'merchant' },
    config.accountUsername && config.accountPassword
      ? { username: config.accountUsername, password: config.accountPassword }
      : undefined,
    clock,
  );
  const operator = await bootstrapOne(
    store,
    { setting: OPERATOR_SETTING, kind: 'operator', name: 'Operator' },
    config.operatorUsername && config.operatorPassword
      ? { username: config.operatorUsername, password: config.operatorPassword }
      : undefined,
    clock,
  );
  // Releases are the operator's; those merchant accounts published before were not.
  await store.adoptReleases(operator.accountId);
  return {
    accountId: merchant.accountId,
    cohortId: cohortOf(merchant.accountId),
    ...(merchant.generated ? { accountCredential: merchant.generated } : {}),
    operatorAccountId: operator.accountId,
    ...(operator.generated ? { operatorCredential: operator.generated } : {}),
    replaced: [...merchant.replaced, ...operator.replaced],
    configured: [
      ...(config.accountUsername && config.accountPassword
        ? [{ accountId: merchant.accountId, username: config.accountUsername }]
        : []),
      ...(config.operatorUsername && config.operatorPassword
        ? [{ accountId: operator.accountId, username: config.operatorUsername }]
        : []),
    ],
  };
}

/** One account named by a setting: made once (relays starting at once agree), and its credential. */
async function bootstrapOne(
  store: Store,
  which: { setting: string; kind: AccountRecord['kind']; name?: string },
  configured: Credential | undefined,
  clock: Clock,
): Promise<{ accountId: string; generated?: Credential; replaced: string[] }> {
  const now = clock.now().toISOString();
  let accountId = await store.getSetting(which.setting);
  let made = false;
  if (!accountId) {
    // Relays started together on a new store each propose an account; one is kept.
    const candidate = newAccountId();
    await store.createAccount({
      id: candidate,
      kind: which.kind,
      ...(which.name ? { name: which.name } : {}),
      createdAt: now,
    });
    accountId = await store.claimSetting(which.setting, candidate);
    made = accountId === candidate;
  }
  const replaced: string[] = [];
  if (configured) {
    const existing = await store.findCredential(configured.username);
    if (existing && existing.accountId !== accountId) {
      throw new Error(`${configured.username} is a credential of another account`);
    }
    // The same password keeps its stored hash: what was signed with the credential (a
    // console session) stays valid across restarts; a new password ends it.
    const unchanged = existing && (await verifySecret(configured.password, existing.secretHash));
    if (!unchanged) {
      await store.putCredential({
        username: configured.username,
        secretHash: await hashSecret(configured.password),
        accountId,
        createdAt: now,
      });
    }
    // The configured username is the account's credential: any other account-wide one
    // (generated at first start, or an earlier username) would otherwise stay valid.
    for (const other of await store.listCredentials(accountId)) {
      if (other.terminalId === undefined && other.username !== configured.username) {
        if (await store.deleteCredential(other.username)) replaced.push(other.username);
      }
    }
    return { accountId, replaced };
  }
  if (!made) return { accountId, replaced };
  const generated = { username: newUsername(), password: newSecret() };
  await store.putCredential({
    username: generated.username,
    secretHash: hashGeneratedSecret(generated.password),
    accountId,
    createdAt: now,
  });
  return { accountId, generated, replaced };
}
