/**
 * The store's accounts and credentials: an account's POS credentials (a terminal's among
 * them, with the revision local mode's verifiers follow) and each agent's broker
 * credential.
 */
import type { AccountRecord, CredentialRecord, TerminalCredentialSet } from '../records.js';

export interface AccountStore {
  /** Stores a new account; false (and nothing changed) when its id is taken. */
  createAccount(account: AccountRecord): Promise<boolean>;
  getAccount(accountId: string): Promise<AccountRecord | undefined>;
  /** Every account, oldest first. */
  listAccounts(): Promise<AccountRecord[]>;
  /**
   * Disables it at `at`, or enables it (`at` undefined); false when there is no such
   * account. Its terminals' credential revisions grow in the same commit: what an agent in
   * local mode may verify changes with it.
   */
  setAccountDisabled(accountId: string, at: string | undefined): Promise<boolean>;
  putCredential(credential: CredentialRecord): Promise<void>;
  findCredential(username: string): Promise<CredentialRecord | undefined>;
  /** The account's credentials, its terminals' included. */
  listCredentials(accountId: string): Promise<CredentialRecord[]>;
  /** Answers whether there was one. */
  deleteCredential(username: string): Promise<boolean>;
  /**
   * A terminal's POS credentials and their revision, read together: the revision grows in
   * the commit of every put or delete of one of them (for local mode's verifiers).
   */
  terminalCredentials(terminalId: string): Promise<TerminalCredentialSet>;

  putAgentCredential(terminalId: string, secretHash: string, createdAt: string): Promise<void>;
  findAgentCredential(terminalId: string): Promise<string | undefined>;
  /** Answers whether there was one. */
  deleteAgentCredential(terminalId: string): Promise<boolean>;
}
