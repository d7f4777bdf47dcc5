/**
 * The POS's durable memory of its payments. The client writes an entry before the first
 * request of a payment and rewrites it after every answer that changes what it knows, so
 * that whatever happens to the process, a new client on the same journal knows what is
 * still owed to the service (a create to repeat, a result to confirm).
 *
 * A payment's phases:
 *
 *   STARTED ──result known or aborted──▶ RESULT ──confirm answered──▶ SETTLED
 *      │                                    │
 *      └─ refused, nothing started ─▶ REFUSED└─ service holds another result ─▶ CONFLICT
 *
 * STARTED and RESULT are "unsettled": recovery finishes them. An abort after SETTLED
 * (a void within the grace period) moves the entry back to RESULT.
 */
import type { PurchaseRequest, RefundRequest, TransactionType } from '../protocol/index.js';
import { TpsError } from './errors.js';
import type { AnyTransaction } from './types.js';

export const JOURNAL_PHASES = ['STARTED', 'RESULT', 'SETTLED', 'CONFLICT', 'REFUSED'] as const;
export type JournalPhase = (typeof JOURNAL_PHASES)[number];
export const UNSETTLED_PHASES: readonly JournalPhase[] = ['STARTED', 'RESULT'];

export interface JournalEntry {
  terminalId: string;
  externalId: string;
  kind: TransactionType;
  /** `pos`: started by this journal's client; `adopted`: taken over from the unconfirmed list. */
  origin: 'pos' | 'adopted';
  /** The create request as first sent, without wait options; a repeat sends exactly this. */
  request: PurchaseRequest | RefundRequest;
  phase: JournalPhase;
  /** What to confirm: the terminal's result_code, or ABORTED after an abort. */
  confirm?: { resultCode: string; resultDescription?: string };
  /** Set when the POS aborted the payment (or gave up on a create it could not place). */
  abort?: { at: string; reason: string };
  /** The latest snapshot the service answered. */
  transaction?: AnyTransaction;
  /** Why the service refused the create, or the confirm (CONFLICT). */
  error?: { code: string; status?: number; description?: string };
  createdAt: string;
  updatedAt: string;
}

/**
 * Where the journal lives. Every method resolves only once its write is durable; the
 * client never sends a request that depends on a write before that.
 */
export interface Journal {
  /** Records a new payment; rejects with JOURNAL_CONFLICT when the pair is already there. */
  insert(entry: JournalEntry): Promise<void>;
  /** Replaces the entry of the same pair; rejects with UNKNOWN_PAYMENT when there is none. */
  update(entry: JournalEntry): Promise<void>;
  get(terminalId: string, externalId: string): Promise<JournalEntry | undefined>;
  /** STARTED and RESULT entries, oldest first, of one terminal or of all. */
  unsettled(terminalId?: string): Promise<JournalEntry[]>;
  close(): Promise<void>;
}

export const entryKey = (terminalId: string, externalId: string) =>
  `${terminalId}\u0000${externalId}`;

export const journalConflict = (entry: Pick<JournalEntry, 'terminalId' | 'externalId'>) =>
  new TpsError({
    code: 'JOURNAL_CONFLICT',
    externalId: entry.externalId,
    message: `the journal already holds ${entry.externalId} on terminal ${entry.terminalId}`,
  });

export const unknownPayment = (terminalId: string, externalId: string) =>
  new TpsError({
    code: 'UNKNOWN_PAYMENT',
    externalId,
    message: `the journal holds no payment ${externalId} on terminal ${terminalId}`,
  });

/** A journal in memory: for tests, and for a POS that keeps its own durable records. */
export class MemoryJournal implements Journal {
  private readonly entries = new Map<string, JournalEntry>();

  async insert(entry: JournalEntry): Promise<void> {
    const key = entryKey(entry.terminalId, entry.externalId);
    if (this.entries.has(key)) throw journalConflict(entry);
    this.entries.set(key, structuredClone(entry));
  }

  async update(entry: JournalEntry): Promise<void> {
    const key = entryKey(entry.terminalId, entry.externalId);
    if (!this.entries.has(key)) throw unknownPayment(entry.terminalId, entry.externalId);
    this.entries.set(key, structuredClone(entry));
  }

  async get(terminalId: string, externalId: string): Promise<JournalEntry | undefined> {
    const entry = this.entries.get(entryKey(terminalId, externalId));
    return entry && structuredClone(entry);
  }

  async unsettled(terminalId?: string): Promise<JournalEntry[]> {
    return [...this.entries.values()]
      .filter((e) => UNSETTLED_PHASES.includes(e.phase))
      .filter((e) => terminalId === undefined || e.terminalId === terminalId)
      .map((e) => structuredClone(e));
  }

  async close(): Promise<void> {}
}
