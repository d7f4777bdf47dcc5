/**
 * What a terminal's card reader can do. The agent reports it with its presence; the relay
 * refuses (4xx) a request the reader cannot carry out, instead of faking it. The native
 * reader can do everything; a ZVT terminal has no pause at customer identification and,
 * depending on its profile, no account check or cashback.
 */
import { z } from 'zod';

export const ReaderProtocol = z.enum(['native', 'zvt']);
export type ReaderProtocol = z.infer<typeof ReaderProtocol>;

export const ReaderCapabilities = z.object({
  protocol: ReaderProtocol,
  /** Stops at customer identification and waits for continue or cancel. */
  pause_on_customer_identified: z.boolean(),
  /** Runs an ACCOUNT_CHECK (card verification without a charge). */
  account_check: z.boolean(),
  /** Pays out cashback with a purchase. */
  cashback: z.boolean(),
  /** Runs a refund. */
  refund: z.boolean(),
  /** Stops a running transaction when asked (cancel). */
  cancel: z.boolean(),
});
export type ReaderCapabilities = z.infer<typeof ReaderCapabilities>;

/** The native reader (docs/serial-protocol.md) and its emulated firmware. */
export const NATIVE_READER_CAPABILITIES: ReaderCapabilities = {
  protocol: 'native',
  pause_on_customer_identified: true,
  account_check: true,
  cashback: true,
  refund: true,
  cancel: true,
};
