/**
 * Keeps full card numbers out of the relay. A card number in the free text of what a
 * terminal sends (a receipt line, a result description, a screen message, a reason, a
 * diagnostic: protocol/free-text.ts) is masked to its first 6 and last 4 digits before the
 * relay keeps or serves it, and a security event is logged naming the terminal and the
 * members, never the digits. The agent masks them before they leave the terminal; this is
 * for an agent that did not (an older one, a faulty one, one that is not ours).
 *
 * A terminal's report whose `card_number_*`
 * shows more than the first 6 and last 4 digits (its reader or agent failed to mask) is
 * applied without those numbers and without the receipts printed with them, and a
 * security event is logged, naming the terminal, the transaction and the fields, never
 * the number.
 *
 * Why applied, not refused: the report carries the payment's result, which only the
 * terminal knows. Refused, the transaction would stay PROCESSING although the customer
 * may have been charged, and the agent, which keeps a report until it is acknowledged
 * and sends the next ones after it, would send it again and again with every later
 * report held up behind it. Dropping the card number loses nothing the payment needs (it
 * is optional, and masked digits are for display only); the receipts go too because the
 * terminal that printed a number unmasked in one place may have printed it on them.
 */
import type { Logger } from 'pino';
import { maskReportText, type Masked } from '../../protocol/free-text.js';
import {
  CARD_NUMBER_FIELDS,
  isMaskedCardNumber,
  type PaymentMethodDetails,
  type TerminalReport,
} from '../../protocol/index.js';

export type SecurityEvent = 'unmasked_card_number' | 'card_number_in_text';

/** Cleans each report before the relay applies it (the report inbox's apply). */
export class CardDataGuard {
  constructor(
    private readonly logger: Logger,
    private readonly onSecurityEvent: (event: SecurityEvent) => void = () => {},
  ) {}

  /** The report as the relay may keep it: without card numbers shown in full. */
  clean(terminalId: string, report: TerminalReport): TerminalReport {
    const kept = this.withoutUnmaskedNumbers(terminalId, report);
    return this.masked(terminalId, 'report', maskReportText(kept), {
      ...(kept.type === 'transaction' ? { transactionId: kept.transaction_id } : {}),
    });
  }

  /**
   * A message's value with card numbers in its free text masked (`masked`, made by one of
   * protocol/free-text.ts's functions); when it held any, the security event is logged.
   * `kind` names the message in the log (`report`, `facts`, …).
   */
  masked<T>(
    terminalId: string,
    kind: string,
    masked: Masked<T>,
    context: Record<string, unknown> = {},
  ): T {
    if (masked.fields.length === 0) return masked.value;
    this.onSecurityEvent('card_number_in_text');
    this.logger.warn(
      {
        security_event: 'card_number_in_text',
        terminalId,
        kind,
        ...context,
        fields: masked.fields,
      },
      'security: a terminal sent a full card number in free text; it was masked to its first 6 and last 4 digits',
    );
    return masked.value;
  }

  private withoutUnmaskedNumbers(terminalId: string, report: TerminalReport): TerminalReport {
    if (report.type === 'transaction') {
      const kept = this.withoutUnmasked(terminalId, report.details, {
        transactionId: report.transaction_id,
        phase: report.phase,
      });
      return kept === report.details ? report : { ...report, details: kept };
    }
    if (report.type === 'local_transaction') {
      // The whole transaction an agent in local mode decided: the same members, at its top.
      const kept = this.withoutUnmasked(terminalId, report.transaction, {
        transactionId: report.transaction.id,
        state: report.transaction.state,
      });
      return kept === report.transaction ? report : { ...report, transaction: kept! };
    }
    return report;
  }

  /** `holder` without card numbers shown beyond 6 and 4 digits, nor its receipts if it had any. */
  private withoutUnmasked<
    T extends {
      payment_method_details?: PaymentMethodDetails;
      receipt_details_customer?: string;
      receipt_details_merchant?: string;
    },
  >(terminalId: string, holder: T | undefined, context: Record<string, unknown>): T | undefined {
    const method = holder?.payment_method_details;
    const unmasked = CARD_NUMBER_FIELDS.filter(
      (field) => method?.[field] !== undefined && !isMaskedCardNumber(method[field]),
    );
    if (!holder || !method || unmasked.length === 0) return holder;
    const keptMethod = { ...method };
    for (const field of unmasked) delete keptMethod[field];
    const {
      receipt_details_customer: customerReceipt,
      receipt_details_merchant: merchantReceipt,
      ...kept
    } = holder;
    this.onSecurityEvent('unmasked_card_number');
    this.logger.warn(
      {
        security_event: 'unmasked_card_number',
        terminalId,
        ...context,
        fields: unmasked.map((field) => `payment_method_details.${field}`),
        receiptsDropped: [customerReceipt, merchantReceipt].filter(Boolean).length,
      },
      'security: a terminal reported a card number showing more than its first 6 and last 4 digits; the number and the receipts were dropped, the result applied',
    );
    return { ...kept, payment_method_details: keptMethod } as T;
  }
}
