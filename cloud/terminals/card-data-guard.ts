/**
 * Keeps full card numbers out of the relay. A terminal's report whose `card_number_*`
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
import {
  CARD_NUMBER_FIELDS,
  isMaskedCardNumber,
  type TerminalReport,
} from '../../protocol/index.js';

export type SecurityEvent = 'unmasked_card_number';

/** Cleans each report before the relay applies it (the report inbox's apply). */
export class CardDataGuard {
  constructor(
    private readonly logger: Logger,
    private readonly onSecurityEvent: (event: SecurityEvent) => void = () => {},
  ) {}

  /** The report as the relay may keep it: without card numbers shown in full. */
  clean(terminalId: string, report: TerminalReport): TerminalReport {
    if (report.type !== 'transaction') return report;
    const method = report.details?.payment_method_details;
    const unmasked = CARD_NUMBER_FIELDS.filter(
      (field) => method?.[field] !== undefined && !isMaskedCardNumber(method[field]),
    );
    if (!method || unmasked.length === 0) return report;
    const keptMethod = { ...method };
    for (const field of unmasked) delete keptMethod[field];
    const {
      receipt_details_customer: customerReceipt,
      receipt_details_merchant: merchantReceipt,
      ...details
    } = report.details!;
    this.onSecurityEvent('unmasked_card_number');
    this.logger.warn(
      {
        security_event: 'unmasked_card_number',
        terminalId,
        transactionId: report.transaction_id,
        phase: report.phase,
        fields: unmasked.map((field) => `payment_method_details.${field}`),
        receiptsDropped: [customerReceipt, merchantReceipt].filter(Boolean).length,
      },
      'security: a terminal reported a card number showing more than its first 6 and last 4 digits; the number and the receipts were dropped, the result applied',
    );
    return { ...report, details: { ...details, payment_method_details: keptMethod } };
  }
}
