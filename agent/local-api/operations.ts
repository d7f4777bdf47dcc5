/**
 * The operations the agent serves for its own terminal in local mode, as the relay serves
 * them (cloud/http/operations.ts): same paths, same request schemas, same answers per
 * revision. Decisions are the local engine's; a create, get or continue waits while the
 * transaction is PROCESSING, as on the relay.
 */
import type { Timers } from '../../common/clock.js';
import { ApiError } from '../../protocol/api-error.js';
import {
  ConfirmRequest,
  ContinueRequest,
  GetRequest,
  PurchaseRequest,
  RefundRequest,
  TerminalStatusRequest,
  UnconfirmedRequest,
  requestedWaitSeconds,
} from '../../protocol/api.js';
import type { Revision } from '../../protocol/fields.js';
import { renderTerminalStatus, type TerminalStatus } from '../../protocol/terminal-status.js';
import { renderTransaction } from '../../protocol/transaction.js';
import type { TransactionRecord } from '../../protocol/transaction-rules/decision.js';
import type { z } from 'zod';
import type { LocalEngine } from '../local/engine.js';

export interface OperationContext {
  revision: Revision;
  /** Aborted when the client goes away, so a long poll frees its place. */
  gone: AbortSignal;
}

export interface LocalOperationDeps {
  engine: LocalEngine;
  /** The terminal's status as its heartbeat last made it. */
  status: () => TerminalStatus;
  timers: Timers;
  defaultWaitSeconds: number;
  /** Takes a place for a long poll, or answers false when all are taken. */
  park: () => boolean;
  unpark: () => void;
}

interface Operation<S extends z.ZodType> {
  request: S;
  handle: (body: z.infer<S>, ctx: OperationContext) => Promise<unknown>;
}

const operation = <S extends z.ZodType>(op: Operation<S>) => op as Operation<z.ZodType>;

export function localOperations(deps: LocalOperationDeps): Record<string, Operation<z.ZodType>> {
  const { engine } = deps;
  const render = (record: TransactionRecord, revision: Revision, withRefundable = false) => ({
    transaction: renderTransaction(
      record.txn,
      revision,
      withRefundable ? engine.refundable(record) : undefined,
    ),
  });
  const waitMs = (body: Parameters<typeof requestedWaitSeconds>[0]) =>
    requestedWaitSeconds(body, deps.defaultWaitSeconds) * 1000;

  /**
   * The record once it leaves PROCESSING, or as it is when the time runs out or the
   * client goes away. With every place taken, a read is refused 429 and a wait after a
   * create or continue answers at once (the relay's rule).
   */
  const whileProcessing = (
    initial: TransactionRecord,
    ms: number,
    gone: AbortSignal,
    afterChange: boolean,
  ): Promise<TransactionRecord> => {
    if (initial.txn.state !== 'PROCESSING' || ms <= 0 || gone.aborted) {
      return Promise.resolve(initial);
    }
    if (!deps.park()) {
      if (afterChange) return Promise.resolve(initial);
      throw new ApiError(
        'TOO_MANY_REQUESTS',
        'too many requests are waiting on this terminal; repeat without waiting or later',
        { 'retry-after': '1' },
      );
    }
    return new Promise((resolve) => {
      let latest = initial;
      const finish = () => {
        deps.timers.clearTimeout(timer);
        engine.off('changed', onChange);
        gone.removeEventListener('abort', finish);
        deps.unpark();
        resolve(latest);
      };
      const onChange = (record: TransactionRecord) => {
        if (record.txn.id !== initial.txn.id) return;
        latest = record;
        if (record.txn.state !== 'PROCESSING') finish();
      };
      const timer = deps.timers.setTimeout(finish, ms, { unref: true });
      engine.on('changed', onChange);
      gone.addEventListener('abort', finish, { once: true });
    });
  };

  const notFound = (terminalId: string, externalId: string) =>
    new ApiError('NOT_FOUND', `no transaction ${externalId} on terminal ${terminalId}`);

  const create =
    (kind: 'PURCHASE' | 'REFUND') =>
    async (body: PurchaseRequest & RefundRequest, ctx: OperationContext) => {
      const created = engine.create(
        kind === 'PURCHASE' ? { kind, request: body } : { kind, request: body },
      );
      return render(await whileProcessing(created, waitMs(body), ctx.gone, true), ctx.revision);
    };

  return {
    '/transaction/purchase': operation({ request: PurchaseRequest, handle: create('PURCHASE') }),
    '/transaction/refund': operation({ request: RefundRequest, handle: create('REFUND') }),
    '/transaction/confirm': operation({
      request: ConfirmRequest,
      handle: async (body, ctx) => render(engine.confirm(body), ctx.revision),
    }),
    '/transaction/get': operation({
      request: GetRequest,
      handle: async (body, ctx) => {
        const found = engine.get(body.terminal_id, body.external_id);
        if (!found) throw notFound(body.terminal_id, body.external_id);
        const record = await whileProcessing(found, waitMs(body), ctx.gone, false);
        const withRefundable = ctx.revision === 'v0' || body.options?.extra_amounts === true;
        return render(record, ctx.revision, withRefundable);
      },
    }),
    '/transaction/continue': operation({
      request: ContinueRequest,
      handle: async (body, ctx) => {
        const continued = engine.continue(body);
        return render(await whileProcessing(continued, waitMs(body), ctx.gone, true), ctx.revision);
      },
    }),
    '/transaction/unconfirmed': operation({
      request: UnconfirmedRequest,
      handle: async (body, ctx) => {
        if (body.terminal_id !== engine.terminalId) {
          throw new ApiError('NOT_FOUND', `no terminal ${body.terminal_id}`);
        }
        return {
          transactions: engine.unconfirmed().map((r) => renderTransaction(r.txn, ctx.revision)),
        };
      },
    }),
    '/terminal/status': operation({
      request: TerminalStatusRequest,
      handle: async (body, ctx) => {
        if (body.terminal_id !== engine.terminalId) {
          throw new ApiError('TERMINAL_NOT_FOUND', `no terminal ${body.terminal_id}`);
        }
        return { status: renderTerminalStatus(deps.status(), ctx.revision) };
      },
    }),
  };
}
