/** `tps pos purchase`, `refund` and `recover`: payments through PosClient and its journal. */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { Currency, ExternalId, TerminalId } from '../protocol/index.js';
import type { ApiClient } from './api-client.js';
import { formatAmount, receiptBlock, settlementLine } from './cli-format.js';
import { amount, flags, localPath, type Connection, type Out, type Values } from './cli-options.js';
import { isTpsError } from './errors.js';
import type { Settlement } from './payment.js';
import { PosClient } from './pos-client.js';
import type { Revision } from './types.js';

export function newPos(conn: Connection, out: Out, human: boolean) {
  let lastRetry = '';
  const local = localPath(conn);
  return new PosClient<Revision>({
    baseUrl: conn.baseUrl,
    ...(local ? { local } : {}),
    username: conn.username,
    password: conn.password,
    terminalId: conn.terminalId,
    journal: conn.journal,
    revision: conn.revision,
    onEvent: (event) => {
      if (!human || event.type !== 'retry') return;
      const line = `${event.operation === 'create' ? 'Payment' : 'Confirmation'} ${event.externalId}: ${event.error.code}, trying again`;
      if (line !== lastRetry) out.note(line);
      lastRetry = line;
    },
  });
}

export const paymentFlags = (values: Values) =>
  flags(
    {
      amount: amount(),
      currency: z.string({ error: 'is needed (e.g. EUR)' }).pipe(Currency),
      cashback: amount().optional(),
      'external-id': ExternalId.optional(),
      original: ExternalId.optional(),
      'original-terminal': TerminalId.optional(),
    },
    values,
  );

export async function payment(
  kind: 'purchase' | 'refund',
  conn: Connection,
  input: ReturnType<typeof paymentFlags>,
  values: Values,
  out: Out,
): Promise<number> {
  const human = values.json !== true;
  const externalId = input['external-id'] ?? `pos-${randomUUID()}`;
  const pos = newPos(conn, out, human);
  const stopWatch = new AbortController();
  const abort = new AbortController();
  const onSigint = () => {
    if (abort.signal.aborted) return;
    out.note('Aborting: the payment is confirmed as failed…');
    abort.abort('Aborted at the command line');
  };
  process.on('SIGINT', onSigint);
  try {
    for (const earlier of await pos.recover({ terminalId: conn.terminalId })) {
      out.note(`Finished an earlier payment: ${settlementLine(earlier)}`);
    }
    out.say(
      `${kind === 'purchase' ? 'Purchase' : 'Refund'} ${externalId}: ${formatAmount(input.amount, input.currency)} on terminal ${conn.terminalId}`,
    );
    const watching = human
      ? watchTerminal(pos.api, conn.terminalId, stopWatch.signal, out)
      : Promise.resolve();
    const body = {
      external_id: externalId,
      requested_amount: input.amount,
      currency: input.currency,
    };
    let result;
    try {
      result =
        kind === 'purchase'
          ? await pos.pay(
              {
                ...body,
                ...(input.cashback !== undefined ? { cashback_amount: input.cashback } : {}),
              },
              { signal: abort.signal },
            )
          : await pos.refund(
              {
                ...body,
                ...(input.original !== undefined
                  ? { original_purchase_external_id: input.original }
                  : {}),
                ...(input['original-terminal'] !== undefined
                  ? { original_purchase_terminal_id: input['original-terminal'] }
                  : {}),
                ...(values['customer-not-present'] ? { customer_not_present: true } : {}),
              },
              { signal: abort.signal },
            );
    } catch (error) {
      stopWatch.abort();
      await watching;
      if (isTpsError(error) && error.aborted) {
        const settled = await pos.settled(externalId);
        out.say(settlementLine(settled));
        if (settled.status === 'settled') out.json(settled.transaction);
        return 130;
      }
      throw error;
    }
    stopWatch.abort();
    await watching;
    const txn = result.transaction;
    out.say(
      `Result: ${result.resultCode}${txn.result_description ? ` (${txn.result_description})` : ''}, total ${formatAmount(txn.total_amount ?? txn.requested_amount, txn.currency)}`,
    );
    if (result.receipts.customer)
      out.say(receiptBlock('customer receipt', result.receipts.customer));
    const settled = await result.settled;
    return finish(settled, out);
  } finally {
    stopWatch.abort();
    process.off('SIGINT', onSigint);
    await pos.close();
  }
}

function finish(settled: Settlement<Revision>, out: Out): number {
  switch (settled.status) {
    case 'settled':
      out.say(
        `${settled.success ? 'Confirmed' : 'Recorded as failed'} (${settled.transaction.state}).`,
      );
      out.json(settled.transaction);
      return settled.success ? 0 : 3;
    case 'conflict':
      out.note(settlementLine(settled));
      if (settled.transaction) out.json(settled.transaction);
      return 3;
    case 'refused':
      out.note(settlementLine(settled));
      return 3;
    case 'pending':
      out.note(settlementLine(settled));
      return 1;
  }
}

/**
 * Shows the terminal's state and screen message whenever they change, until `signal`
 * aborts; then once more, so the last screen (Approved, Declined…) is seen.
 */
async function watchTerminal(
  api: ApiClient<Revision>,
  terminalId: string,
  signal: AbortSignal,
  out: Out,
): Promise<void> {
  let last: string | undefined;
  const read = async (call: { signal?: AbortSignal }) => {
    try {
      const { status } = await api.terminalStatus(
        { terminal_id: terminalId },
        { ...call, retry: false },
      );
      return `Terminal: ${status.transaction_state ?? '-'}${status.screen_message ? ` - ${status.screen_message}` : ''}`;
    } catch {
      return undefined; // the payment itself reports what matters; the screen is a nicety
    }
  };
  // What the screen showed before this payment is not news.
  last = await read({ signal });
  while (!signal.aborted) {
    await new Promise((resolve) => setTimeout(resolve, 150));
    const line = await read({ signal });
    if (line !== undefined && line !== last && !signal.aborted) out.say(line);
    if (line !== undefined) last = line;
  }
  const final = await read({});
  if (final !== undefined && final !== last) out.say(final);
}

export async function recover(conn: Connection, values: Values, out: Out): Promise<number> {
  const pos = newPos(conn, out, values.json !== true);
  try {
    const settlements = await pos.recover({
      terminalId: conn.terminalId,
      unknown: values['abort-unknown'] ? 'abort' : 'resume',
    });
    if (values.adopt)
      settlements.push(...(await pos.adoptUnconfirmed({ terminalId: conn.terminalId })));
    if (settlements.length === 0) out.say('Nothing to recover.');
    for (const s of settlements) out.say(settlementLine(s));
    out.json(
      settlements.map((s) => ({
        external_id: s.externalId,
        terminal_id: s.terminalId,
        status: s.status,
        ...('transaction' in s && s.transaction ? { transaction: s.transaction } : {}),
        ...('error' in s ? { error: s.error.toJSON() } : {}),
      })),
    );
    return settlements.some((s) => s.status === 'conflict' || s.status === 'pending') ? 3 : 0;
  } finally {
    await pos.close();
  }
}
