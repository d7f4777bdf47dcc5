/**
 * The spec's basic client flow, done for the integrator:
 *
 *   1. the external_id is written to the journal before the first request;
 *   2. the create is repeated while PROCESSING and after failures (creator.ts);
 *   3. the result is journaled, then handed to the caller with its receipt texts;
 *   4. the confirm runs in the background until CONFIRMED or COMMITTED (confirmer.ts).
 *
 * An abort is journaled first, then stops the create and confirms the payment as failed
 * (ABORTED), which also closes a create that may still be on its way: the service
 * records a failure for a pair it never saw, so a late create starts nothing.
 * recover() finishes whatever a previous client left in the journal.
 */
import { randomUUID } from 'node:crypto';
import { PurchaseRequest, RefundRequest, localDnsName, type Revision } from '../protocol/index.js';
import { ApiClient, type ApiClientOptions } from './api-client.js';
import type { BackoffPolicy } from '../common/backoff.js';
import { Confirmer } from './confirmer.js';
import { Creator } from './creator.js';
import { TpsError, abortedError, toTpsError } from './errors.js';
import { followEvents, type FollowEventsOptions, type PosEvent } from './events.js';
import {
  entryKey,
  journalConflict,
  unknownPayment,
  type Journal,
  type JournalEntry,
} from './journal.js';
import { Ledger } from './ledger.js';
import {
  resultOf,
  settlementOf,
  type PaymentResult,
  type PosClientEvent,
  type Settlement,
} from './payment.js';
import { SqliteJournal } from './sqlite-journal.js';
import { TerminalLocks } from './terminal-locks.js';
import { DEFAULT_BACKOFF, systemTiming, type Timing } from './timing.js';
import type { AnyTransaction, PurchaseBody, RefundBody } from './types.js';

export interface PosClientOptions<R extends Revision = 'v1'> extends ApiClientOptions<R> {
  /** The terminal payments run on unless a call names another. */
  terminalId?: string;
  /** A Journal, or the path of the SQLite journal file (created when missing). */
  journal: Journal | string;
  /** Long-poll wait of each create while the terminal works (default 25 s). */
  waitSeconds?: number;
  /** Back-off of repeated creates and of background confirms (default 250 ms doubling to 30 s). */
  backoff?: Partial<BackoffPolicy>;
  /** How long a create answered TERMINAL_BUSY is repeated before giving up (default 5 s). */
  busyWaitMs?: number;
  /** How long a create answered TOO_MANY_UNCONFIRMED waits for this client's confirms (default 30 s). */
  unconfirmedWaitMs?: number;
  /** Generates external ids (default `pos-` and a random UUID). */
  newExternalId?: () => string;
  /** Progress: every answer, retries, results and settlements. Must not throw. */
  onEvent?: (event: PosClientEvent) => void;
}

type CreateFields = 'terminal_id' | 'external_id' | 'options' | 'wait_seconds' | 'wait_timeout';
export type PurchaseInput = Omit<PurchaseBody, CreateFields> & {
  terminal_id?: string;
  external_id?: string;
};
export type RefundInput = Omit<RefundBody, CreateFields> & {
  terminal_id?: string;
  external_id?: string;
};

export interface PayOptions {
  /** Aborting it aborts the payment, as abort() does, until pay() has resolved. */
  signal?: AbortSignal;
}

export interface RecoverOptions {
  /** Only this terminal's payments (default: every payment in the journal). */
  terminalId?: string;
  /**
   * A payment whose create may or may not have reached the service: `resume` repeats the
   * create to learn (or start) it and then confirms its result; `abort` confirms it as
   * failed. Default `resume`.
   */
  unknown?: 'resume' | 'abort';
}

const ABORT_DESCRIPTION = 'Aborted by the POS';

export class PosClient<R extends Revision = 'v1'> {
  readonly api: ApiClient<R>;
  readonly terminalId: string | undefined;
  private readonly journal: Journal;
  private readonly ownsJournal: boolean;
  private readonly ledger: Ledger;
  private readonly confirmer: Confirmer;
  private readonly creator: Creator;
  private readonly timing: Timing;
  private readonly locks = new TerminalLocks();
  private readonly closing = new AbortController();
  /** Payments whose create runs in this client, by key. */
  private readonly running = new Map<
    string,
    { controller: AbortController; done: Promise<unknown> }
  >();
  /** Aborts being journaled, by key. */
  private readonly aborting = new Map<string, Promise<unknown>>();

  constructor(private readonly options: PosClientOptions<R>) {
    // The local path leads to this client's terminal: its certificate carries its name.
    const { local } = options;
    this.api = new ApiClient(
      local?.ca !== undefined && local.serverName === undefined && options.terminalId !== undefined
        ? { ...options, local: { ...local, serverName: localDnsName(options.terminalId) } }
        : options,
    );
    this.terminalId = options.terminalId;
    this.timing = options.timing ?? systemTiming;
    const policy = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.ownsJournal = typeof options.journal === 'string';
    this.journal =
      typeof options.journal === 'string' ? new SqliteJournal(options.journal) : options.journal;
    this.ledger = new Ledger(this.journal, () => this.nowIso());
    const api = this.api as unknown as ApiClient<Revision>;
    const emit = (event: PosClientEvent) => this.emit(event);
    this.confirmer = new Confirmer({
      api,
      ledger: this.ledger,
      timing: this.timing,
      policy,
      closed: this.closing.signal,
      emit,
    });
    this.creator = new Creator({
      api,
      ledger: this.ledger,
      confirmer: this.confirmer,
      timing: this.timing,
      policy,
      waitSeconds: options.waitSeconds ?? 25,
      busyWaitMs: options.busyWaitMs ?? 5_000,
      unconfirmedWaitMs: options.unconfirmedWaitMs ?? 30_000,
      now: () => this.nowIso(),
      emit,
    });
  }

  /** Runs a purchase to its result; the confirm continues in the background (`result.settled`). */
  pay(input: PurchaseInput, options: PayOptions = {}): Promise<PaymentResult<R>> {
    return this.start('PURCHASE', input, options);
  }

  /** Runs a refund to its result, exactly as pay() does. */
  refund(input: RefundInput, options: PayOptions = {}): Promise<PaymentResult<R>> {
    return this.start('REFUND', input, options);
  }

  /**
   * Aborts a payment at any point: journals the abort, stops its create, and confirms it
   * as failed (ABORTED). After the result was known this voids it (the service reverses a
   * success within its grace period). Resolves with the settlement of the failure.
   */
  async abort(
    externalId: string,
    options: { terminalId?: string; reason?: string } = {},
  ): Promise<Settlement<R>> {
    const terminalId = this.terminalFor(options.terminalId);
    const key = entryKey(terminalId, externalId);
    this.running.get(key)?.controller.abort(abortedError('aborted by the caller', externalId));
    const recorded = this.recordAbort(key, terminalId, externalId, options.reason);
    this.aborting.set(key, recorded);
    try {
      await recorded;
    } finally {
      if (this.aborting.get(key) === recorded) this.aborting.delete(key);
    }
    return this.settled(externalId, { terminalId });
  }

  /** Resolves when the payment's background work ends (`pending` if the client closes first). */
  async settled(externalId: string, options: { terminalId?: string } = {}): Promise<Settlement<R>> {
    const terminalId = this.terminalFor(options.terminalId);
    const key = entryKey(terminalId, externalId);
    const entry = await this.ledger.load(terminalId, externalId);
    if (!entry) throw unknownPayment(terminalId, externalId);
    if (this.closing.signal.aborted) return settlementOf(entry);
    const final = await this.ledger.whenFinal(key);
    return settlementOf(final ?? this.ledger.current(key) ?? entry);
  }

  /**
   * Finishes what a previous client on this journal left: confirms recorded results and
   * aborts, and repeats (or aborts) creates whose outcome it never learned. Resolves
   * with every such payment's settlement.
   */
  async recover(options: RecoverOptions = {}): Promise<Settlement<R>[]> {
    this.assertOpen();
    const entries = (await this.ledger.unsettled(options.terminalId)).filter(
      (e) => !this.running.has(entryKey(e.terminalId, e.externalId)),
    );
    const settlements = entries.map((e) =>
      this.settled(e.externalId, { terminalId: e.terminalId }),
    );
    const creates = new Map<string, JournalEntry[]>();
    for (const entry of entries) {
      if (entry.phase === 'RESULT')
        this.confirmer.start(entryKey(entry.terminalId, entry.externalId));
      else creates.set(entry.terminalId, [...(creates.get(entry.terminalId) ?? []), entry]);
    }
    // Terminals side by side; the payments of one terminal one after another.
    await Promise.all(
      [...creates.values()].map(async (list) => {
        for (const entry of list) {
          const key = entryKey(entry.terminalId, entry.externalId);
          if (options.unknown === 'abort') {
            await this.recordAbort(key, entry.terminalId, entry.externalId, 'Aborted on recovery');
            continue;
          }
          await this.create(entry, true).catch((error: unknown) => {
            // A refusal or an abort is journaled and shows in the settlement.
            if (this.ledger.current(key)?.phase === 'STARTED' && !this.closing.signal.aborted) {
              throw error;
            }
          });
        }
      }),
    );
    return Promise.all(settlements);
  }

  /**
   * Takes over the terminal's unconfirmed transactions that this journal does not hold
   * (identifiers lost with an old journal): journals them, then confirms each with the
   * result the service holds (or as failed with `abort: true`), waiting for the result
   * of any still running. Resolves with their settlements.
   */
  async adoptUnconfirmed(
    options: { terminalId?: string; abort?: boolean } = {},
  ): Promise<Settlement<R>[]> {
    this.assertOpen();
    const terminalId = this.terminalFor(options.terminalId);
    const { transactions } = await this.api.unconfirmed({ terminal_id: terminalId });
    const settlements: Promise<Settlement<R>>[] = [];
    for (const txn of transactions as AnyTransaction[]) {
      if (await this.ledger.load(terminalId, txn.external_id)) continue;
      const now = this.nowIso();
      const entry = await this.ledger.insert({
        terminalId,
        externalId: txn.external_id,
        kind: txn.type,
        origin: 'adopted',
        request: {
          terminal_id: terminalId,
          external_id: txn.external_id,
          requested_amount: txn.requested_amount ?? 0,
          currency: txn.currency ?? 'XXX',
        },
        phase: 'STARTED',
        transaction: txn,
        createdAt: now,
        updatedAt: now,
      });
      const key = entryKey(terminalId, entry.externalId);
      settlements.push(this.settled(entry.externalId, { terminalId }));
      if (options.abort) {
        await this.recordAbort(key, terminalId, entry.externalId, 'Aborted on adoption');
      } else if (txn.state === 'AWAITING_CONFIRM') {
        await this.creator.recordResult(key, txn);
      } else {
        void this.create(entry, true).catch(() => {}); // its settlement tells the outcome
      }
    }
    return Promise.all(settlements);
  }

  /** Follows the events of this client's terminal (see followEvents). */
  events(options: FollowEventsOptions = {}): AsyncGenerator<PosEvent<R>, void, undefined> {
    return followEvents(this.api, {
      ...(this.terminalId !== undefined ? { subject: this.terminalId } : {}),
      timing: this.timing,
      ...options,
    });
  }

  /** Resolves when the background confirms running now have ended (or `timeoutMs` passed). */
  drain(options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<void> {
    return this.confirmer.idle(undefined, options.timeoutMs, options.signal);
  }

  /**
   * Stops all work, leaving every unsettled payment in the journal for recover(): a
   * running pay() rejects with CLIENT_CLOSED, settled() resolves `pending`.
   */
  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    this.closing.abort(new TpsError({ code: 'CLIENT_CLOSED', message: 'the client is closed' }));
    for (const { controller } of this.running.values()) {
      controller.abort(this.closing.signal.reason);
    }
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
    await Promise.allSettled([...this.aborting.values()]);
    await this.confirmer.idle();
    await this.ledger.flush();
    this.ledger.release();
    if (this.ownsJournal) await this.journal.close();
  }

  private async start(
    kind: 'PURCHASE' | 'REFUND',
    input: PurchaseInput | RefundInput,
    options: PayOptions,
  ): Promise<PaymentResult<R>> {
    this.assertOpen();
    if (options.signal?.aborted) throw abortedError('aborted before the payment started');
    const terminalId = this.terminalFor(input.terminal_id);
    const externalId = input.external_id ?? this.options.newExternalId?.() ?? `pos-${randomUUID()}`;
    const request = { ...input, terminal_id: terminalId, external_id: externalId };
    const checked = (kind === 'PURCHASE' ? PurchaseRequest : RefundRequest).safeParse(request);
    if (!checked.success) {
      throw new TpsError({
        code: 'INVALID_ARGUMENT',
        message: checked.error.issues
          .map((i) => `${i.path.join('.') || 'request'}: ${i.message}`)
          .join('; '),
      });
    }
    const { entry, resumed } = await this.begin(kind, request);
    if (entry.phase === 'STARTED') return this.create(entry, resumed, options.signal);
    if (entry.phase === 'RESULT') this.confirmer.start(entryKey(terminalId, externalId));
    return resultOf(entry, this.settled(externalId, { terminalId }));
  }

  /** Journals a new payment, or finds the same one (resumed: a create may have been sent). */
  private async begin(
    kind: 'PURCHASE' | 'REFUND',
    request: PurchaseRequest | RefundRequest,
  ): Promise<{ entry: JournalEntry; resumed: boolean }> {
    const existing = await this.ledger.load(request.terminal_id, request.external_id);
    if (existing) {
      const same =
        existing.kind === kind &&
        existing.request.requested_amount === request.requested_amount &&
        existing.request.currency === request.currency;
      if (!same) throw journalConflict(existing);
      if (existing.phase !== 'REFUSED') return { entry: existing, resumed: true };
      // Refused before: nothing was started, so the same payment may be tried again.
      const key = entryKey(existing.terminalId, existing.externalId);
      const { error: _refusal, ...again } = existing;
      const entry = await this.ledger.mutate(key, () => ({ ...again, phase: 'STARTED' }));
      return { entry, resumed: false };
    }
    const now = this.nowIso();
    const entry = await this.ledger.insert({
      terminalId: request.terminal_id,
      externalId: request.external_id,
      kind,
      origin: 'pos',
      request,
      phase: 'STARTED',
      createdAt: now,
      updatedAt: now,
    });
    return { entry, resumed: false };
  }

  /** Runs the create loop of a journaled payment, one per terminal at a time, abortable. */
  private async create(
    entry: JournalEntry,
    uncertain: boolean,
    signal?: AbortSignal,
  ): Promise<PaymentResult<R>> {
    const { terminalId, externalId } = entry;
    const key = entryKey(terminalId, externalId);
    if (this.running.has(key)) {
      throw new TpsError({
        code: 'INVALID_ARGUMENT',
        externalId,
        message: `payment ${externalId} is already running in this client`,
      });
    }
    const controller = new AbortController();
    const work = (async () => {
      let release: (() => void) | undefined;
      try {
        release = await this.locks.acquire(terminalId, controller.signal);
        return await this.creator.run(key, uncertain, controller.signal);
      } catch (error) {
        throw await this.interrupted(key, externalId, error);
      } finally {
        release?.();
      }
    })();
    this.running.set(key, { controller, done: work.catch(() => {}) });
    const onAbort = () => {
      this.abort(externalId, { terminalId, reason: reasonOf(signal) }).catch(() => {});
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    try {
      const outcome = await work;
      if ('refused' in outcome) throw outcome.refused;
      // An abort that came while the result was being journaled wins: it voids the result.
      if (controller.signal.aborted) throw await this.interrupted(key, externalId, undefined);
      return resultOf(outcome.entry, this.settled(externalId, { terminalId }));
    } finally {
      this.running.delete(key);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Why a create stopped early, as the error pay() rejects with. */
  private async interrupted(key: string, externalId: string, error: unknown): Promise<TpsError> {
    await this.aborting.get(key)?.catch(() => {});
    if (this.ledger.current(key)?.abort) {
      return abortedError(`payment ${externalId} was aborted`, externalId);
    }
    if (this.closing.signal.aborted) {
      return new TpsError({
        code: 'CLIENT_CLOSED',
        externalId,
        message: `the client closed while payment ${externalId} ran; recover() finishes it`,
      });
    }
    return toTpsError(error).forPayment(externalId);
  }

  private async recordAbort(
    key: string,
    terminalId: string,
    externalId: string,
    reason = ABORT_DESCRIPTION,
  ): Promise<void> {
    if (!(await this.ledger.load(terminalId, externalId))) {
      throw unknownPayment(terminalId, externalId);
    }
    const description = printable(reason);
    const entry = await this.ledger.mutate(key, (e) => {
      if (e.abort || e.phase === 'REFUSED' || e.phase === 'CONFLICT') return e;
      if (e.phase === 'SETTLED' && e.transaction?.result_code !== 'SUCCESS') return e;
      if (e.phase === 'SETTLED' && e.transaction?.state === 'COMMITTED') {
        throw new TpsError({
          code: 'INVALID_STATE',
          externalId,
          message: `payment ${externalId} is committed as successful and can no longer be aborted`,
        });
      }
      return {
        ...e,
        phase: 'RESULT',
        abort: { at: this.nowIso(), reason: description },
        confirm: { resultCode: 'ABORTED', resultDescription: description },
      };
    });
    if (entry.phase === 'RESULT') this.confirmer.start(key);
  }

  private terminalFor(terminalId: string | undefined): string {
    const id = terminalId ?? this.terminalId;
    if (id === undefined) {
      throw new TpsError({
        code: 'INVALID_ARGUMENT',
        message: 'no terminal_id: pass one, or terminalId to the client',
      });
    }
    return id;
  }

  private assertOpen(): void {
    if (this.closing.signal.aborted) {
      throw new TpsError({ code: 'CLIENT_CLOSED', message: 'the client is closed' });
    }
  }

  private nowIso(): string {
    return new Date(this.timing.now()).toISOString();
  }

  private emit(event: PosClientEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // A listener's fault must not stop a payment.
    }
  }
}

/** A result_description: 1-255 printable ASCII characters. */
function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').slice(0, 255) || ABORT_DESCRIPTION;
}

function reasonOf(signal: AbortSignal | undefined): string {
  const reason: unknown = signal?.reason;
  if (typeof reason === 'string' && reason !== '') return reason;
  if (reason instanceof Error && reason.name !== 'AbortError' && reason.message) {
    return reason.message;
  }
  return ABORT_DESCRIPTION;
}
