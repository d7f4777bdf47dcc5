/**
 * The background half of the reliability rule: confirm each recorded result until the
 * service answers CONFIRMED or COMMITTED, with capped, jittered back-off and no limit on
 * attempts. A confirm can never double anything (repeated, it answers the current
 * state), so every failure is repeated, except the one answer that says repeating is
 * pointless: 400 INVALID_STATE (or TRANSACTION_NOT_FOUND), meaning the service holds
 * another result. That is recorded as a CONFLICT, with the service's transaction.
 */
import type { Revision } from '../protocol/index.js';
import type { ApiClient } from './api-client.js';
import { Backoff, type BackoffPolicy } from '../common/backoff.js';
import { TpsError, toTpsError } from './errors.js';
import type { JournalEntry } from './journal.js';
import type { Ledger } from './ledger.js';
import { settlementOf, type PosClientEvent } from './payment.js';
import type { Timing } from './timing.js';
import { FINAL_STATES, SUCCESS, type AnyTransaction } from './types.js';

export interface ConfirmerDeps {
  api: ApiClient<Revision>;
  ledger: Ledger;
  timing: Timing;
  policy: BackoffPolicy;
  /** Aborted when the client closes: loops stop, entries stay for recovery. */
  closed: AbortSignal;
  emit(event: PosClientEvent): void;
}

const CONFLICT_CODES = new Set(['INVALID_STATE', 'TRANSACTION_NOT_FOUND']);

export class Confirmer {
  private readonly loops = new Map<string, { terminalId: string; done: Promise<void> }>();

  constructor(private readonly deps: ConfirmerDeps) {}

  /** Starts confirming the entry under `key`, unless a loop already does. */
  start(key: string): void {
    if (this.loops.has(key) || this.deps.closed.aborted) return;
    const entry = this.deps.ledger.current(key);
    if (!entry) return;
    const done = this.run(key)
      .catch((error: unknown) => {
        // Only a broken journal lands here; the entry stays unsettled for recovery.
        this.deps.emit({
          type: 'retry',
          externalId: entry.externalId,
          terminalId: entry.terminalId,
          operation: 'confirm',
          error: toTpsError(error),
          delayMs: Number.POSITIVE_INFINITY,
        });
      })
      .finally(() => this.loops.delete(key));
    this.loops.set(key, { terminalId: entry.terminalId, done });
  }

  pendingOn(terminalId: string): number {
    return [...this.loops.values()].filter((l) => l.terminalId === terminalId).length;
  }

  /** Resolves when the loops running now (of one terminal, or all) end, or `timeoutMs` passes. */
  async idle(terminalId?: string, timeoutMs?: number, signal?: AbortSignal): Promise<void> {
    const running = [...this.loops.values()]
      .filter((l) => terminalId === undefined || l.terminalId === terminalId)
      .map((l) => l.done);
    if (running.length === 0) return;
    const all = Promise.all(running).then(() => undefined);
    if (timeoutMs === undefined && !signal) return all;
    await Promise.race([all, this.deps.timing.sleep(timeoutMs ?? 2 ** 31 - 1, signal)]);
  }

  private async run(key: string): Promise<void> {
    const { api, ledger, timing, closed } = this.deps;
    const backoff = new Backoff({ ...this.deps.policy, random: timing.random });
    for (;;) {
      const entry = ledger.current(key);
      if (closed.aborted || !entry || entry.phase !== 'RESULT' || !entry.confirm) return;
      const sent = entry.confirm;
      let transaction: AnyTransaction;
      try {
        ({ transaction } = await api.confirm(
          {
            terminal_id: entry.terminalId,
            external_id: entry.externalId,
            result_code: sent.resultCode,
            ...(sent.resultDescription !== undefined
              ? { result_description: sent.resultDescription }
              : {}),
          },
          { signal: closed, retry: false },
        ));
      } catch (error) {
        const failure = toTpsError(error, '/transaction/confirm');
        if (closed.aborted) return;
        if (CONFLICT_CODES.has(failure.code) && ledger.current(key)?.confirm === sent) {
          return this.conflict(key, entry, failure);
        }
        const delayMs = backoff.next(failure.retryAfterMs);
        this.deps.emit({
          type: 'retry',
          externalId: entry.externalId,
          terminalId: entry.terminalId,
          operation: 'confirm',
          error: failure,
          delayMs,
        });
        await timing.sleep(delayMs, closed);
        continue;
      }
      backoff.reset();
      // An abort may have changed what to confirm while this one was under way.
      if (ledger.current(key)?.confirm !== sent) continue;
      if (!FINAL_STATES.has(transaction.state)) {
        await timing.sleep(backoff.next(), closed);
        continue;
      }
      if ((transaction.result_code === SUCCESS) !== (sent.resultCode === SUCCESS)) {
        return this.conflict(
          key,
          entry,
          new TpsError({
            code: 'INVALID_STATE',
            operation: '/transaction/confirm',
            message: `the service holds result ${transaction.result_code ?? 'none'} for ${entry.externalId}, not ${sent.resultCode}`,
          }),
          transaction,
        );
      }
      const settled = await ledger.mutate(key, (e) =>
        e.confirm === sent ? { ...e, phase: 'SETTLED', transaction } : e,
      );
      if (settled.phase === 'SETTLED') {
        this.deps.emit({ type: 'settled', settlement: settlementOf(settled) });
        return;
      }
    }
  }

  /** Records that the service holds another result, with its transaction where it can be read. */
  private async conflict(
    key: string,
    entry: JournalEntry,
    failure: TpsError,
    known?: AnyTransaction,
  ): Promise<void> {
    let transaction = known;
    if (!transaction) {
      try {
        ({ transaction } = await this.deps.api.get(
          {
            terminal_id: entry.terminalId,
            external_id: entry.externalId,
            options: { wait_seconds: 0 },
          },
          { signal: this.deps.closed },
        ));
      } catch {
        transaction = undefined; // the conflict stands; the snapshot is what the journal had
      }
    }
    const recorded = await this.deps.ledger.mutate(key, (e) => ({
      ...e,
      phase: 'CONFLICT',
      ...(transaction ? { transaction } : {}),
      error: {
        code: failure.code,
        ...(failure.status !== undefined ? { status: failure.status } : {}),
        description: failure.description ?? failure.message,
      },
    }));
    this.deps.emit({ type: 'settled', settlement: settlementOf(recorded) });
  }
}
