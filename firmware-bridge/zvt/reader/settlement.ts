/**
 * What a ZVT end-of-day (06 50) answered, as the settlement the agent reports
 * (protocol/settlement.ts): the result, the batch's total (BMP 04), its receipt numbers and
 * per card group counts and amounts (BMP 60, zvt-notes §5.6), the trace number (0B), and
 * the administration receipt the PT printed (06 D1 / 06 D3) as receipt text.
 *
 * A BMP 60 that does not have the layout of the notes is left out rather than guessed at:
 * the result and the receipt still count.
 */
import type { Settlement } from '../../../protocol/settlement.js';
import { TOTALS_GROUPS, readTotals, type TotalsGroup } from '../bmp-values.js';
import type { ZvtOutcome } from '../session.js';
import type { ZvtCharset } from './profiles.js';
import { receiptsOf } from './receipt-text.js';
import { refusalOfCode, resultOfCode } from './result-codes.js';

/** The settlement's fields the terminal decides (the agent adds when, why and which try). */
export type ZvtSettlement = Omit<
  Settlement,
  'trigger' | 'attempt' | 'started_at' | 'finished_at' | 'period_start' | 'retry_at'
>;

const GROUP_NAMES: Readonly<
  Record<TotalsGroup, NonNullable<Settlement['totals']>[number]['card_group']>
> = {
  girocard: 'GIROCARD',
  jcb: 'JCB',
  eurocard: 'MASTERCARD',
  amex: 'AMEX',
  visa: 'VISA',
  diners: 'DINERS',
  others: 'OTHERS',
};

/** BMP 60 of the last 04 0F, as sent (the named values do not keep it). */
function totalsBytes(outcome: ZvtOutcome): Uint8Array | undefined {
  const last = outcome.statusInformation.at(-1);
  const bmp = last?.bmps.find((field) => field.tag === 0x60);
  return bmp?.format === 'binary' ? bmp.value : undefined;
}

export function settlementOf(
  outcome: ZvtOutcome,
  charset: ZvtCharset,
  currency: string,
): ZvtSettlement {
  const code = outcome.resultCode ?? (outcome.kind === 'completed' ? 0 : undefined);
  const succeeded = outcome.kind === 'completed' && code === 0;
  const values = outcome.result ?? {};
  const raw = totalsBytes(outcome);
  const totals = raw && readTotals(raw);
  const receipts = receiptsOf(outcome.printLines, outcome.printTextBlocks, charset);
  const receipt = receipts.customer ?? receipts.merchant;
  const failure =
    succeeded || code === undefined
      ? undefined
      : outcome.kind === 'refused'
        ? refusalOfCode(code)
        : resultOfCode(code);
  return {
    status: succeeded ? 'SUCCESS' : 'FAILED',
    ...(failure ?? {}),
    ...(!succeeded && !failure
      ? {
          result_code: 'SYSTEM_ERROR',
          result_description: `ZVT: the end-of-day ended (${outcome.kind}) without a result`,
        }
      : {}),
    ...(values.amount !== undefined ? { total_amount: values.amount, currency } : {}),
    ...(values.traceNumber !== undefined && values.traceNumber <= 999_999
      ? { trace_number: values.traceNumber }
      : {}),
    ...(totals
      ? {
          first_receipt_number: totals.firstReceipt,
          last_receipt_number: totals.lastReceipt,
          totals: TOTALS_GROUPS.filter((group) => totals.groups[group].count > 0).map((group) => ({
            card_group: GROUP_NAMES[group],
            count: totals.groups[group].count,
            amount: totals.groups[group].total,
          })),
        }
      : {}),
    ...(receipt ? { receipt_text: receipt } : {}),
  };
}
