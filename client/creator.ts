/**
 * The foreground half of the reliability rule: repeat the create (idempotent on
 * terminal_id + external_id) while the transaction is PROCESSING and after every failure
 * that may pass (network errors, time-outs, 5xx, 503 with Retry-After), until the result
 * is known; journal it and hand it to the confirmer.
 *
 * The service's two refusals of a new transaction are handled here: TERMINAL_BUSY is
 * repeated for `busyWaitMs` (a transaction just finishing), then given up;
 * TOO_MANY_UNCONFIRMED waits once for this client's own background confirms to drain,
 * then is given up. Any other 4xx is given up at once. Giving up records REFUSED
 * (nothing was started), unless an earlier attempt may still be on its way: then the
 * pair is closed by confirming it as failed, so that attempt starts nothing.
 */
import type { Revision } from '../protocol/index.js';
import type { ApiClient } from './api-client.js';
import { Backoff, type BackoffPolicy } from '../common/backoff.js';
import type { Confirmer } from './confirmer.js';
import { toTpsError, type TpsError } from './errors.js';
import type { JournalEntry } from './journal.js';
import type { Ledger } from './ledger.js';
import { settlementOf, type PosClientEvent } from './payment.js';
import type { Timing } from './timing.js';
import { FINAL_STATES, type AnyTransaction, type PurchaseBody, type RefundBody } from './types.js';

export interface CreatorDeps {
  api: ApiClient<Revision>;
  ledger: Ledger;
  confirmer: Confirmer;
  timing: Timing;
  policy: BackoffPolicy;
  waitSeconds: number;
  busyWaitMs: number;
  unconfirmedWaitMs: number;
  now(): string;
  emit(event: PosClientEvent): void;
}

/** The entry once its result is journaled, or the refusal that ended it. */
export type CreateOutcome = { entry: JournalEntry } | { refused: TpsError };

/** A create answered PROCESSING this fast (a short wait) is not repeated sooner. */
const MIN_POLL_INTERVAL_MS = 200;

export class Creator {
  constructor(private readonly deps: CreatorDeps) {}

  /**
   * Runs the payment under `key` to its result. `uncertain`: an earlier create of it may
   * exist or still be on its way. Throws `signal.reason` when `signal` aborts.
   */
  async run(key: string, uncertain: boolean, signal: AbortSignal): Promise<CreateOutcome> {
    const { ledger, timing, confirmer } = this.deps;
    const backoff = new Backoff({ ...this.deps.policy, random: timing.random });
    let busySince: number | undefined;
    let waitedForConfirms = false;
    for (;;) {
      signal.throwIfAborted();
      const entry = ledger.current(key)!;
      const sentAt = timing.now();
      let transaction: AnyTransaction;
      try {
        ({ transaction } = await this.probe(entry, signal));
      } catch (error) {
        signal.throwIfAborted();
        const failure = toTpsError(error);
        if (failure.retryable) {
          uncertain = true;
          await this.pause(entry, failure, backoff.next(failure.retryAfterMs), signal);
          continue;
        }
        if (failure.code === 'TERMINAL_BUSY') {
          busySince ??= timing.now();
          if (timing.now() - busySince < this.deps.busyWaitMs) {
            await this.pause(entry, failure, backoff.next(), signal);
            continue;
          }
        }
        if (
          failure.code === 'TOO_MANY_UNCONFIRMED' &&
          !waitedForConfirms &&
          confirmer.pendingOn(entry.terminalId) > 0
        ) {
          waitedForConfirms = true;
          await confirmer.idle(entry.terminalId, this.deps.unconfirmedWaitMs, signal);
          continue;
        }
        return { refused: await this.refuse(key, failure, uncertain) };
      }
      signal.throwIfAborted();
      this.deps.emit({ type: 'update', ...ids(entry), transaction });
      if (transaction.state === 'AWAITING_CONFIRM') {
        return { entry: await this.recordResult(key, transaction) };
      }
      if (FINAL_STATES.has(transaction.state)) {
        // Confirmed already (by an earlier run, or by hand): nothing is owed.
        const settled = await ledger.mutate(key, (e) => ({ ...e, phase: 'SETTLED', transaction }));
        this.deps.emit({ type: 'settled', settlement: settlementOf(settled) });
        return { entry: settled };
      }
      await this.noteSnapshot(key, transaction);
      signal.throwIfAborted();
      if (transaction.state === 'PROCESSING') {
        // The service held the request while the terminal worked: ask again at once.
        backoff.reset();
        const elapsed = timing.now() - sentAt;
        if (elapsed < MIN_POLL_INTERVAL_MS) {
          await timing.sleep(MIN_POLL_INTERVAL_MS - elapsed, signal);
        }
      } else {
        // AWAITING_CONTINUE (pay() never asks to pause; the service aborts it in time) or
        // a state from a newer service: the service answers at once, so back off.
        await timing.sleep(backoff.next(), signal);
      }
    }
  }

  /** Journals the result, then starts its confirm (an abort journaled first keeps its own). */
  async recordResult(key: string, transaction: AnyTransaction): Promise<JournalEntry> {
    const recorded = await this.deps.ledger.mutate(key, (e) =>
      e.phase !== 'STARTED'
        ? { ...e, transaction }
        : {
            ...e,
            phase: 'RESULT',
            transaction,
            confirm: { resultCode: transaction.result_code ?? 'UNKNOWN_RESULT' },
          },
    );
    this.deps.confirmer.start(key);
    this.deps.emit({ type: 'result', ...ids(recorded), transaction });
    return recorded;
  }

  /** The create as first sent (a get for an adopted payment), long-polling while the terminal works. */
  private probe(entry: JournalEntry, signal: AbortSignal) {
    const { api } = this.deps;
    const wait = { wait_seconds: this.deps.waitSeconds };
    const call = { signal, retry: false as const };
    if (entry.origin === 'adopted') {
      return api.get(
        { terminal_id: entry.terminalId, external_id: entry.externalId, options: wait },
        call,
      );
    }
    return entry.kind === 'REFUND'
      ? api.refund({ ...(entry.request as RefundBody), options: wait }, call)
      : api.purchase({ ...(entry.request as PurchaseBody), options: wait }, call);
  }

  private async pause(
    entry: JournalEntry,
    error: TpsError,
    delayMs: number,
    signal: AbortSignal,
  ): Promise<void> {
    this.deps.emit({ type: 'retry', ...ids(entry), operation: 'create', error, delayMs });
    await this.deps.timing.sleep(delayMs, signal);
  }

  /** Journals a snapshot of a running payment when it changed (not every identical answer). */
  private async noteSnapshot(key: string, transaction: AnyTransaction): Promise<void> {
    const known = this.deps.ledger.current(key)?.transaction;
    if (known?.state === transaction.state && known.updated_at === transaction.updated_at) return;
    await this.deps.ledger.mutate(key, (e) => ({ ...e, transaction }));
  }

  private async refuse(key: string, failure: TpsError, uncertain: boolean): Promise<TpsError> {
    const { ledger } = this.deps;
    const error = {
      code: failure.code,
      ...(failure.status !== undefined ? { status: failure.status } : {}),
      ...(failure.description !== undefined ? { description: failure.description } : {}),
    };
    // IDEMPOTENCY_MISMATCH: the pair belongs to another transaction; it is not ours to close.
    if (uncertain && failure.code !== 'IDEMPOTENCY_MISMATCH') {
      const reason = `Not started: ${failure.code}`.slice(0, 255);
      await ledger.mutate(key, (e) => ({
        ...e,
        phase: 'RESULT',
        error,
        abort: { at: this.deps.now(), reason },
        confirm: { resultCode: 'ABORTED', resultDescription: reason },
      }));
      this.deps.confirmer.start(key);
    } else {
      await ledger.mutate(key, (e) => ({ ...e, phase: 'REFUSED', error }));
    }
    return failure.forPayment(ledger.current(key)!.externalId);
  }
}

const ids = (entry: JournalEntry) => ({
  externalId: entry.externalId,
  terminalId: entry.terminalId,
});
