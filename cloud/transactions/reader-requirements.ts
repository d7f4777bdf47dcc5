/**
 * What a create asks of the terminal's card reader, checked against what its agent said
 * the reader can do (its presence). A request the reader cannot carry out is refused
 * before anything is stored or sent: a ZVT terminal has no pause at customer
 * identification, and faking one (approving, then reversing) would charge the customer.
 */
import {
  NATIVE_READER_CAPABILITIES,
  type ReaderCapabilities,
} from '../../protocol/reader-capabilities.js';
import type { CreateRequest } from '../../protocol/transaction-rules/state-machine.js';

type Capability = Exclude<keyof ReaderCapabilities, 'protocol'>;

const WHAT: Record<Capability, string> = {
  pause_on_customer_identified: 'cannot pause at customer identification',
  account_check: 'cannot run an account check',
  cashback: 'cannot pay out cashback',
  refund: 'cannot run a refund',
  cancel: 'cannot stop a running transaction',
};

/** The capabilities a create needs; none for a plain purchase. */
export function requiredCapabilities(create: CreateRequest): Capability[] {
  if (create.kind === 'REFUND') return ['refund'];
  const { request } = create;
  const needs: Capability[] = [];
  if (request.options?.on_customer_identified?.pause === true) {
    needs.push('pause_on_customer_identified');
  }
  if ((request.cashback_amount ?? 0) > 0) needs.push('cashback');
  return needs;
}

/**
 * Why the reader cannot carry out the create, or undefined when it can. Capabilities never
 * reported (an agent older than them, a simulated terminal) are the native reader's.
 */
export function readerRefusal(
  needs: Capability[],
  capabilities: ReaderCapabilities | undefined,
): string | undefined {
  const reader = capabilities ?? NATIVE_READER_CAPABILITIES;
  const missing = needs.filter((need) => !reader[need]);
  if (missing.length === 0) return undefined;
  return `the terminal's card reader (${reader.protocol}) ${missing.map((m) => WHAT[m]).join(' and ')}`;
}
