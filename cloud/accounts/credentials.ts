/**
 * Adding, revoking and rotating credentials. The store change comes first; then this
 * relay forgets what it verified of the credential and ends its agent's sessions, and the
 * change bus tells every other relay on the store to do the same, so a revoked credential
 * stops working everywhere at once rather than when caches expire (authenticator.ts, 10 s).
 *
 * An account credential acts on its own account's credentials, the operator on those of
 * the account it names. A credential set from this relay's environment
 * (TPS_ACCOUNT_USERNAME / TPS_OPERATOR_USERNAME) is not rotated here and its account gets
 * no other account credential: the next start would put the configured one back and
 * remove the others (bootstrap.ts). The credential making the request cannot revoke
 * itself, so an account is never left without a way in.
 */
import type {
  AccountCredentialAddResponse,
  CredentialRequest,
  CredentialRevokeResponse,
  CredentialRotateResponse,
  CredentialView,
} from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import type { ChangeBus, ChangeNotice } from '../cluster/change-bus.js';
import { ApiError } from '../errors.js';
import { newSecret, newUsername } from '../ids.js';
import type { Store } from '../store/store.js';
import { hashForBroker } from './mosquitto-hash.js';
import type { Principal } from './principal.js';
import { hashGeneratedSecret } from './secrets.js';

export type CredentialNotice = ChangeNotice & { kind: 'credential' };

export interface CredentialAdminOptions {
  store: Store;
  bus: ChangeBus;
  clock: Clock;
  /** What this relay does when a credential changes (the same as for another relay's notice). */
  changed(notice: CredentialNotice): Promise<void>;
  /** A terminal's POS credential was rotated or revoked (committed): its agent hears of it. */
  posCredentialChanged?(terminalId: string): void;
  /** The account credentials set from this relay's environment, and their accounts. */
  configured?: ReadonlyArray<{ accountId: string; username: string }>;
}

export class CredentialAdmin {
  constructor(private readonly options: CredentialAdminOptions) {}

  async revoke(
    principal: Principal,
    request: CredentialRequest,
  ): Promise<CredentialRevokeResponse> {
    const view = await this.find(principal, request);
    if (view.type === 'API' && view.terminal_id === undefined) {
      if (view.username === principal.username) {
        throw new ApiError(
          'INVALID_REQUEST',
          'username: the credential making the request cannot revoke itself',
        );
      }
    }
    const { store } = this.options;
    const removed =
      view.type === 'AGENT'
        ? await store.deleteAgentCredential(view.username)
        : await store.deleteCredential(view.username);
    if (!removed) throw notFound(request.username);
    await this.announce(view);
    return { credential: { ...view, revoked: true } };
  }

  async rotate(
    principal: Principal,
    request: CredentialRequest,
  ): Promise<CredentialRotateResponse> {
    const view = await this.find(principal, request);
    if (this.options.configured?.some((c) => c.username === view.username)) {
      throw new ApiError(
        'INVALID_REQUEST',
        "username: this credential is set in the relay's environment (TPS_ACCOUNT_USERNAME / TPS_OPERATOR_USERNAME); change it there",
      );
    }
    const { store } = this.options;
    const password = newSecret();
    const now = this.options.clock.now().toISOString();
    if (view.type === 'AGENT') {
      await store.putAgentCredential(view.username, hashForBroker(password), now);
    } else {
      const current = await store.findCredential(view.username);
      if (!current) throw notFound(request.username);
      await store.putCredential({ ...current, secretHash: hashGeneratedSecret(password) });
    }
    await this.announce(view);
    return { credential: { ...view, password } };
  }

  /** A new account credential of the principal's account (the one acted for), shown once. */
  async addAccountCredential(principal: Principal): Promise<AccountCredentialAddResponse> {
    if (principal.terminalId !== undefined) {
      throw new ApiError('FORBIDDEN', 'only an account credential can add account credentials');
    }
    if (this.options.configured?.some((c) => c.accountId === principal.accountId)) {
      throw new ApiError(
        'INVALID_REQUEST',
        "account_id: this account's credential is set in the relay's environment (TPS_ACCOUNT_USERNAME / TPS_OPERATOR_USERNAME), which allows it no other",
      );
    }
    const username = newUsername();
    const password = newSecret();
    await this.options.store.putCredential({
      username,
      secretHash: hashGeneratedSecret(password),
      accountId: principal.accountId,
      createdAt: this.options.clock.now().toISOString(),
    });
    return { credential: { account_id: principal.accountId, username, password } };
  }

  /** The credential named, if it belongs to the principal's account; else CREDENTIAL_NOT_FOUND. */
  private async find(principal: Principal, request: CredentialRequest): Promise<CredentialView> {
    if (principal.terminalId !== undefined) {
      throw new ApiError(
        'FORBIDDEN',
        'only an account credential can revoke or rotate credentials',
      );
    }
    const { store } = this.options;
    const type = request.type ?? 'API';
    if (type === 'AGENT') {
      const terminal = await store.getTerminal(request.username);
      // A simulated terminal's agent runs inside the relay, which holds its credential.
      if (
        terminal?.accountId !== principal.accountId ||
        terminal.kind !== 'AGENT' ||
        (await store.findAgentCredential(terminal.id)) === undefined
      ) {
        throw notFound(request.username);
      }
      return { type, username: terminal.id, terminal_id: terminal.id };
    }
    const credential = await store.findCredential(request.username);
    if (credential?.accountId !== principal.accountId) throw notFound(request.username);
    return {
      type,
      username: credential.username,
      ...(credential.terminalId ? { terminal_id: credential.terminalId } : {}),
    };
  }

  private async announce(view: CredentialView): Promise<void> {
    const notice: CredentialNotice = {
      kind: 'credential',
      type: view.type,
      username: view.username,
    };
    await this.options.changed(notice);
    if (view.type === 'API' && view.terminal_id !== undefined) {
      this.options.posCredentialChanged?.(view.terminal_id);
    }
    await this.options.bus.announce(notice);
  }
}

const notFound = (username: string) =>
  new ApiError('CREDENTIAL_NOT_FOUND', `no credential ${username} in this account`);
