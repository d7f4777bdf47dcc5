/** How `tps pos` shows things to a person: amounts, transactions, statuses, events. */
import { formatMinorUnits } from '../protocol/currencies.js';
import type { PosEvent } from './events.js';
import type { Settlement } from './payment.js';
import type { AnyTransaction, Revision, TerminalStatusOf } from './types.js';

/** Minor units as major with the currency's decimals (ISO 4217): 1000 EUR → `EUR 10.00`, 1000 JPY → `JPY 1000`. */
export function formatAmount(amount: number | undefined, currency: string | undefined): string {
  if (amount === undefined) return '-';
  return formatMinorUnits(amount, currency ?? '').trim();
}

/** One line: `order-1  PURCHASE  CONFIRMED  SUCCESS  EUR 10.00`. */
export function transactionLine(txn: AnyTransaction): string {
  return [
    txn.external_id,
    txn.type,
    txn.state,
    txn.result_code ?? '-',
    formatAmount(txn.total_amount ?? txn.requested_amount, txn.currency),
  ].join('  ');
}

/** Several lines: the members a person at the till wants to see. */
export function transactionDetails(txn: AnyTransaction): string {
  const card = txn.payment_method_details;
  const lines = [
    `${txn.type} ${txn.external_id} (${txn.id}) on terminal ${txn.terminal_id}`,
    `  state      ${txn.state}`,
    `  result     ${txn.result_code ?? '-'}${txn.result_description ? ` (${txn.result_description})` : ''}`,
    `  requested  ${formatAmount(txn.requested_amount, txn.currency)}`,
  ];
  if (txn.total_amount !== undefined) {
    lines.push(`  total      ${formatAmount(txn.total_amount, txn.currency)}`);
  }
  if (card?.card_scheme) {
    lines.push(
      `  card       ${card.card_scheme} ${card.card_number_customer ?? ''} ${card.card_entry_mode ?? ''}`.trimEnd(),
    );
  }
  if (txn.reference) lines.push(`  reference  ${txn.reference}`);
  const extra = (txn as { extra_amounts?: { refundable_amount?: number } }).extra_amounts;
  const refundable =
    extra?.refundable_amount ?? (txn as { refundable_amount?: number }).refundable_amount;
  if (refundable !== undefined) {
    lines.push(`  refundable ${formatAmount(refundable, txn.currency)}`);
  }
  return lines.join('\n');
}

export function statusLine<R extends Revision>(status: TerminalStatusOf<R>): string {
  const parts = [
    `Terminal ${status.terminal_id ?? ''}`.trim() + ':',
    status.connected === false ? 'offline' : 'connected',
    status.transaction_state ?? '-',
  ];
  if (status.screen_message) parts.push(`"${status.screen_message}"`);
  if (status.battery_percentage !== undefined) {
    parts.push(
      `battery ${status.battery_percentage} %${status.battery_charging ? ' (charging)' : ''}`,
    );
  }
  return parts.join(' ');
}

export function eventLine<R extends Revision>(event: PosEvent<R>): string {
  const head = `${event.event.time ?? ''} ${event.kind} ${event.event.subject ?? ''}`.trim();
  if (event.kind === 'Transaction') return `${head}: ${transactionLine(event.transaction)}`;
  const s = event.status;
  return `${head}: ${s.transaction_state ?? '-'}${s.screen_message ? ` "${s.screen_message}"` : ''}${s.connected === false ? ' offline' : ''}`;
}

export function settlementLine<R extends Revision>(settlement: Settlement<R>): string {
  const id = settlement.externalId;
  switch (settlement.status) {
    case 'settled':
      return `${id}: ${settlement.resultCode}${settlement.aborted ? ' (aborted)' : ''}, ${settlement.transaction.state}`;
    case 'conflict':
      return `${id}: CONFLICT: the service holds ${settlement.transaction?.result_code ?? 'another result'} (${settlement.error.code}); that is the true result`;
    case 'refused':
      return `${id}: refused by the service (${settlement.error.code}); nothing was charged`;
    case 'pending':
      return `${id}: not finished yet; run 'tps pos recover' again`;
  }
}

/** A receipt text framed for the terminal window. */
export function receiptBlock(title: string, text: string): string {
  const rule = '-'.repeat(32);
  return `${`-- ${title} `.padEnd(32, '-')}\n${text.endsWith('\n') ? text : `${text}\n`}${rule}`;
}
