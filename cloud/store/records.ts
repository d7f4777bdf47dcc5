/** What the relay keeps, beside the API shapes it renders from them. */
import type {
  TerminalCommand,
  TerminalReadings,
  TerminalStatus,
  Transaction,
} from '../../protocol/index.js';

export interface CredentialRecord {
  username: string;
  /** scrypt hash of the secret, never the secret itself. */
  secretHash: string;
  accountId: string;
  /** A terminal credential reaches only this terminal; an account credential all of its own. */
  terminalId?: string;
  createdAt: string;
}

export interface TerminalCapabilities {
  printer: boolean;
  battery: boolean;
}

export interface TerminalRecord {
  id: string;
  accountId: string;
  kind: 'SIMULATOR' | 'AGENT';
  capabilities: TerminalCapabilities;
  status: TerminalStatus;
  createdAt: string;
}

export interface TransactionRecord {
  /** The transaction as the current revision shows it; the single source of truth. */
  txn: Transaction;
  accountId: string;
  /** Internal id of the original purchase, for a referenced refund. */
  originalId?: string;
  /**
   * When the relay acts on its own: a CONFIRMED transaction commits, a paused one is
   * aborted. Absent when nothing is due.
   */
  dueAt?: string;
  /** Bumped on every write; lets readers and notifications order snapshots. */
  version: number;
}

export interface PendingCommand {
  terminalId: string;
  command: TerminalCommand;
}

export type { TerminalReadings };
