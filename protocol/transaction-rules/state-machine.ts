/**
 * The transaction state machine of the spec, as pure decisions over a consistent
 * snapshot: the relay's (Store.changeTransaction) and, for its own terminal in local mode,
 * the agent's (docs/local-mode.md). Every row of the spec's transition table is one branch
 * here; docs/transactions.md draws the machine and the choices the spec leaves open.
 */
import { ApiError } from '../api-error.js';
import type { ConfirmRequest, ContinueRequest, PurchaseRequest, RefundRequest } from '../api.js';
import { METADATA_MAX_BYTES, metadataBytes } from '../fields.js';
import type { TerminalCommand, TransactionReport } from '../terminal-link.js';
import type { Transaction } from '../transaction.js';
import type { ChangeContext, Decide, Decision as Change, TransactionRecord } from './decision.js';

export interface MachineSettings {
  maxUnconfirmed: number;
  /** How long a terminal may take to receive a start before it refuses it as expired. */
  startTtlMs: number;
  pauseTimeoutMs: number;
  gracePeriodMs: number;
}

/** What a decision may take from outside: the time and fresh identifiers. */
export interface DecisionEnv {
  now: Date;
  newTransactionId(): string;
  newCommandId(): string;
  settings: MachineSettings;
}

export type CreateRequest =
  { kind: 'PURCHASE'; request: PurchaseRequest } | { kind: 'REFUND'; request: RefundRequest };

const SUCCESS = 'SUCCESS';
const iso = (d: Date) => d.toISOString();
const after = (d: Date, ms: number) => new Date(d.getTime() + ms).toISOString();

function next(
  record: TransactionRecord,
  now: Date,
  patch: Partial<Transaction>,
  dueAt?: string,
): TransactionRecord {
  const { dueAt: _previous, ...rest } = record;
  return {
    ...rest,
    txn: { ...record.txn, ...patch, updated_at: iso(now) },
    ...(dueAt ? { dueAt } : {}),
    version: record.version + 1,
  };
}

/** Merged metadata: new keys win; the merge is held to the same size limit as a request. */
function mergeMetadata(txn: Transaction, metadata: Record<string, unknown> | undefined) {
  if (!metadata) return {};
  const merged = { ...txn.metadata, ...metadata };
  if (metadataBytes(merged) > METADATA_MAX_BYTES) {
    throw new ApiError(
      'INVALID_REQUEST',
      `metadata: merged with the stored metadata it exceeds ${METADATA_MAX_BYTES} bytes as JSON`,
    );
  }
  return { metadata: merged };
}

const cancel = (env: DecisionEnv, txn: Transaction): TerminalCommand => ({
  type: 'transaction.cancel',
  command_id: env.newCommandId(),
  transaction_id: txn.id,
});

const unchanged = <R>(result: R): Change<R> => ({ result });

/**
 * What a purchase can still give back: the captured amount (or the total without cash
 * back), less every refund that succeeded or is still running against it.
 */
export function refundableAmount(
  original: TransactionRecord,
  refunds: readonly TransactionRecord[],
): number {
  const { txn } = original;
  if (txn.type !== 'PURCHASE' || txn.result_code !== SUCCESS) return 0;
  const base =
    txn.captured_amount ??
    (txn.total_amount ?? txn.requested_amount ?? 0) - (txn.cashback_amount ?? 0);
  const reserved = refunds.reduce((sum, refund) => {
    const r = refund.txn;
    if (r.result_code === undefined) return sum + (r.requested_amount ?? 0);
    if (r.result_code === SUCCESS) return sum + (r.total_amount ?? r.requested_amount ?? 0);
    return sum;
  }, 0);
  return Math.max(0, base - reserved);
}

export function decideCreate(
  create: CreateRequest,
  accountId: string,
  env: DecisionEnv,
): Decide<TransactionRecord> {
  const { kind, request } = create;
  return (ctx) => {
    if (ctx.terminalOwner !== accountId) {
      throw new ApiError('TERMINAL_NOT_FOUND', `no terminal ${request.terminal_id}`);
    }
    if (ctx.current) return unchanged(repeatOfCreate(ctx.current, create));
    if (ctx.active) {
      throw new ApiError(
        'TERMINAL_BUSY',
        `terminal ${request.terminal_id} is still processing transaction ${ctx.active.txn.external_id}`,
      );
    }
    if (ctx.unconfirmedCount >= env.settings.maxUnconfirmed) {
      throw new ApiError(
        'TOO_MANY_UNCONFIRMED',
        `terminal ${request.terminal_id} has ${ctx.unconfirmedCount} unconfirmed transactions (limit ${env.settings.maxUnconfirmed}); confirm them first`,
      );
    }
    const now = iso(env.now);
    const txn: Transaction = {
      id: env.newTransactionId(),
      terminal_id: request.terminal_id,
      external_id: request.external_id,
      type: kind,
      state: 'PROCESSING',
      created_at: now,
      updated_at: now,
      requested_amount: request.requested_amount,
      currency: request.currency,
      ...(request.metadata ? { metadata: request.metadata } : {}),
    };
    let originalId: string | undefined;
    if (kind === 'PURCHASE') {
      if (request.cashback_amount !== undefined) txn.cashback_amount = request.cashback_amount;
    } else {
      txn.customer_not_present = request.customer_not_present ?? false;
      if (request.original_purchase_external_id !== undefined) {
        const original = checkOriginalPurchase(ctx, request, accountId);
        originalId = original.txn.id;
        txn.original_purchase_id = original.txn.id;
        txn.original_purchase_external_id = original.txn.external_id;
        txn.original_purchase_terminal_id = original.txn.terminal_id;
      }
    }
    const start: TerminalCommand = {
      type: 'transaction.start',
      command_id: env.newCommandId(),
      transaction_id: txn.id,
      external_id: txn.external_id,
      kind,
      requested_amount: request.requested_amount,
      currency: request.currency,
      pause_on_customer_identified: request.options?.on_customer_identified?.pause ?? false,
      expires_at: after(env.now, env.settings.startTtlMs),
      ...(txn.cashback_amount !== undefined ? { cashback_amount: txn.cashback_amount } : {}),
      ...(kind === 'REFUND' ? { customer_not_present: txn.customer_not_present } : {}),
      ...(ctx.original?.record?.txn.reference
        ? { original_reference: ctx.original.record.txn.reference }
        : {}),
    };
    const record: TransactionRecord = {
      txn,
      accountId,
      ...(originalId ? { originalId } : {}),
      version: 1,
    };
    return { write: record, commands: [start], result: record };
  };
}

/** A repeated create answers the current state, unless it asks for something else. */
function repeatOfCreate(current: TransactionRecord, { kind, request }: CreateRequest) {
  const { txn } = current;
  // A pair first seen in a failure confirm was recorded as a committed failure: the
  // create starts nothing and answers that.
  if (txn.type === 'UNKNOWN') return current;
  const differs = [
    txn.type !== kind && 'type',
    txn.requested_amount !== request.requested_amount && 'requested_amount',
    txn.currency !== request.currency && 'currency',
  ].filter(Boolean);
  if (differs.length > 0) {
    throw new ApiError(
      'IDEMPOTENCY_MISMATCH',
      `transaction ${txn.external_id} exists with a different ${differs.join(', ')}; use a new external_id`,
    );
  }
  return current;
}

function checkOriginalPurchase(
  ctx: ChangeContext,
  request: RefundRequest,
  accountId: string,
): TransactionRecord {
  const original = ctx.original?.record;
  if (!original || original.accountId !== accountId) {
    throw new ApiError(
      'ORIGINAL_PURCHASE_NOT_FOUND',
      `no purchase ${request.original_purchase_external_id} on terminal ${request.original_purchase_terminal_id ?? request.terminal_id}`,
    );
  }
  const { txn } = original;
  if (
    txn.type !== 'PURCHASE' ||
    txn.result_code !== SUCCESS ||
    (txn.state !== 'CONFIRMED' && txn.state !== 'COMMITTED')
  ) {
    throw new ApiError(
      'ORIGINAL_PURCHASE_NOT_REFUNDABLE',
      `purchase ${txn.external_id} is ${txn.state} with result ${txn.result_code ?? 'none'}; only a successful, confirmed purchase can be refunded`,
    );
  }
  const refundable = refundableAmount(original, ctx.original?.refunds ?? []);
  if (request.requested_amount > refundable) {
    throw new ApiError(
      'REFUND_EXCEEDS_REFUNDABLE',
      `requested_amount ${request.requested_amount} exceeds the refundable amount ${refundable} of purchase ${txn.external_id}`,
    );
  }
  return original;
}

export function decideConfirm(
  request: ConfirmRequest,
  accountId: string,
  env: DecisionEnv,
): Decide<TransactionRecord> {
  const success = request.result_code === SUCCESS;
  return (ctx) => {
    if (ctx.terminalOwner !== accountId) {
      throw new ApiError('TERMINAL_NOT_FOUND', `no terminal ${request.terminal_id}`);
    }
    const current = ctx.current;
    if (!current) {
      if (success) {
        throw new ApiError(
          'TRANSACTION_NOT_FOUND',
          `no transaction ${request.external_id} on terminal ${request.terminal_id}; only a failure can be confirmed for it`,
        );
      }
      return recordUnseenFailure(request, accountId, env);
    }
    const { txn } = current;
    const failure = {
      state: 'COMMITTED' as const,
      result_code: request.result_code,
      confirmed_at: iso(env.now),
      ...(request.result_description !== undefined
        ? { result_description: request.result_description }
        : {}),
      ...mergeMetadata(txn, request.metadata),
    };
    switch (txn.state) {
      case 'COMMITTED':
        if ((txn.result_code === SUCCESS) === success) return unchanged(current);
        throw new ApiError(
          'INVALID_STATE',
          `transaction ${txn.external_id} is committed with result ${txn.result_code ?? 'none'} and cannot change`,
        );
      case 'CONFIRMED': {
        if (success) return unchanged(current);
        if (current.dueAt && current.dueAt <= iso(env.now)) {
          throw new ApiError(
            'INVALID_STATE',
            `the grace period for confirming transaction ${txn.external_id} as failed has ended`,
          );
        }
        const write = next(current, env.now, failure);
        return { write, commands: [cancel(env, txn)], result: write };
      }
      case 'AWAITING_CONFIRM': {
        if (!success) {
          const write = next(current, env.now, failure);
          const commands = txn.result_code === SUCCESS ? [cancel(env, txn)] : [];
          return { write, commands, result: write };
        }
        if (txn.result_code !== SUCCESS) {
          throw new ApiError(
            'INVALID_STATE',
            `the terminal reported ${txn.result_code ?? 'no result'} for transaction ${txn.external_id}; only a failure can be confirmed`,
          );
        }
        const authorized = txn.authorized_amount ?? txn.total_amount;
        if (
          request.captured_amount !== undefined &&
          authorized !== undefined &&
          request.captured_amount > authorized
        ) {
          throw new ApiError(
            'INVALID_REQUEST',
            `captured_amount ${request.captured_amount} exceeds the authorized amount ${authorized}`,
          );
        }
        const windowMs = (request.commit_window_seconds ?? NaN) * 1000;
        const graceMs = Number.isNaN(windowMs) ? env.settings.gracePeriodMs : windowMs;
        const patch: Partial<Transaction> = {
          state: graceMs > 0 ? 'CONFIRMED' : 'COMMITTED',
          confirmed_at: iso(env.now),
          ...(request.captured_amount !== undefined
            ? { captured_amount: request.captured_amount }
            : {}),
          ...mergeMetadata(txn, request.metadata),
        };
        const write = next(
          current,
          env.now,
          patch,
          graceMs > 0 ? after(env.now, graceMs) : undefined,
        );
        return { write, result: write };
      }
      case 'PROCESSING':
      case 'AWAITING_CONTINUE': {
        if (success) {
          throw new ApiError(
            'INVALID_STATE',
            `transaction ${txn.external_id} is ${txn.state}; only a transaction awaiting confirmation can be confirmed as successful`,
          );
        }
        const write = next(current, env.now, failure);
        return { write, commands: [cancel(env, txn)], result: write };
      }
    }
  };
}

/** A failure confirmed for a pair never seen: recorded, so that a later create starts nothing. */
function recordUnseenFailure(
  request: ConfirmRequest,
  accountId: string,
  env: DecisionEnv,
): Change<TransactionRecord> {
  const now = iso(env.now);
  const write: TransactionRecord = {
    txn: {
      id: env.newTransactionId(),
      terminal_id: request.terminal_id,
      external_id: request.external_id,
      type: 'UNKNOWN',
      state: 'COMMITTED',
      created_at: now,
      updated_at: now,
      confirmed_at: now,
      result_code: request.result_code,
      ...(request.result_description !== undefined
        ? { result_description: request.result_description }
        : {}),
      ...(request.metadata ? { metadata: request.metadata } : {}),
    },
    accountId,
    version: 1,
  };
  return { write, result: write };
}

export function decideContinue(
  request: ContinueRequest,
  accountId: string,
  env: DecisionEnv,
): Decide<TransactionRecord> {
  return (ctx) => {
    const current = ctx.current;
    if (ctx.terminalOwner !== accountId) {
      throw new ApiError('TERMINAL_NOT_FOUND', `no terminal ${request.terminal_id}`);
    }
    if (!current) {
      throw new ApiError(
        'TRANSACTION_NOT_FOUND',
        `no transaction ${request.external_id} on terminal ${request.terminal_id}`,
      );
    }
    const { txn } = current;
    if (txn.state !== 'AWAITING_CONTINUE') {
      throw new ApiError(
        'INVALID_STATE',
        `transaction ${txn.external_id} is ${txn.state}; only a transaction awaiting continue can be continued`,
      );
    }
    const write = next(current, env.now, {
      state: 'PROCESSING',
      ...(request.requested_amount !== undefined
        ? { requested_amount: request.requested_amount }
        : {}),
      ...mergeMetadata(txn, request.metadata),
    });
    const command: TerminalCommand = {
      type: 'transaction.continue',
      command_id: env.newCommandId(),
      transaction_id: txn.id,
      ...(request.requested_amount !== undefined
        ? { requested_amount: request.requested_amount }
        : {}),
    };
    return { write, commands: [command], result: write };
  };
}

/** What the terminal reports about a transaction moves it on; a stale report changes nothing. */
export function decideReport(
  report: TransactionReport,
  env: DecisionEnv,
): Decide<TransactionRecord | undefined> {
  return (ctx) => {
    const current = ctx.current;
    if (!current || current.txn.id !== report.transaction_id) return unchanged(current);
    const { txn } = current;
    const running = txn.state === 'PROCESSING' || txn.state === 'AWAITING_CONTINUE';
    switch (report.phase) {
      case 'CUSTOMER_IDENTIFIED': {
        if (txn.state !== 'PROCESSING') return unchanged(current);
        const identity = report.details?.customer_identity;
        const write = next(
          current,
          env.now,
          { state: 'AWAITING_CONTINUE', ...(identity ? { customer_identity: identity } : {}) },
          after(env.now, env.settings.pauseTimeoutMs),
        );
        return { write, result: write };
      }
      case 'COMPLETED': {
        if (!running) return unchanged(current);
        const write = next(current, env.now, {
          ...report.details,
          state: 'AWAITING_CONFIRM',
          result_code: report.result_code ?? 'UNKNOWN_RESULT',
          ...(report.result_description !== undefined
            ? { result_description: report.result_description }
            : {}),
        });
        return { write, result: write };
      }
      case 'CANCELLED': {
        if (!running) return unchanged(current);
        const write = next(current, env.now, {
          state: 'AWAITING_CONFIRM',
          result_code: report.result_code ?? 'ABORTED',
          result_description: report.result_description ?? 'The terminal cancelled the transaction',
        });
        return { write, result: write };
      }
    }
  };
}

/** The record's owner acting on its own when something falls due: a pause times out, a grace period ends. */
export function decideDue(
  transactionId: string,
  env: DecisionEnv,
): Decide<TransactionRecord | undefined> {
  return (ctx) => {
    const current = ctx.current;
    if (!current || current.txn.id !== transactionId || !current.dueAt) return unchanged(current);
    if (current.dueAt > iso(env.now)) return unchanged(current);
    const { txn } = current;
    if (txn.state === 'AWAITING_CONTINUE') {
      const write = next(current, env.now, {
        state: 'AWAITING_CONFIRM',
        result_code: 'ABORTED',
        result_description: `Not continued within ${Math.round(env.settings.pauseTimeoutMs / 1000)} seconds`,
      });
      return { write, commands: [cancel(env, txn)], result: write };
    }
    if (txn.state === 'CONFIRMED') {
      const write = next(current, env.now, { state: 'COMMITTED' });
      return { write, result: write };
    }
    const write = next(current, env.now, {});
    return { write, result: write };
  };
}
