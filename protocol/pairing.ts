/**
 * Pairing: a fresh agent asks the relay for a short code, someone with the account
 * credential claims it, and the agent collects its broker credential (docs/fleet.md).
 * The agent's two operations are unauthenticated: the agent has no credential yet. It
 * proves it is the one that asked by a secret only it knows, sent as a SHA-256 hash when
 * it asks and in clear (over HTTPS) when it collects.
 */
import { z } from 'zod';
import { AccountId } from './accounts.js';
import { CohortId } from './events.js';
import { TerminalId, WaitSeconds } from './fields.js';

/** Crockford's base-32 without I, L, O, U: no two letters a person mixes up. */
export const PAIRING_CODE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const PAIRING_CODE_LENGTH = 8;

/** A code as shown, `ABCD-EFGH`, or typed: case, spaces and hyphens do not matter. */
export const PairingCode = z
  .string()
  .max(32)
  .transform((code) => code.toUpperCase().replace(/[\s-]/g, ''))
  .pipe(
    z
      .string()
      .regex(
        new RegExp(`^[${PAIRING_CODE_ALPHABET}]{${PAIRING_CODE_LENGTH}}$`),
        `must be ${PAIRING_CODE_LENGTH} characters of ${PAIRING_CODE_ALPHABET}`,
      ),
  );

/** How a code is shown: two groups of four, easier to read aloud and type. */
export const formatPairingCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

/** The agent's pairing secret: 32 random bytes, base64url. */
export const PairingSecret = z
  .string()
  .regex(/^[A-Za-z0-9_-]{43}$/, 'must be 43 base64url characters');
const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 hash in lowercase hex');

/** A person's name for a terminal, shown in lists. */
export const TerminalName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[^\p{Cc}]+$/u, 'must not contain control characters');

export const PairingStartRequest = z.object({ secret_sha256: Sha256Hex });
export type PairingStartRequest = z.infer<typeof PairingStartRequest>;
export const PairingStartResponse = z.object({
  code: z.string(),
  expires_at: z.string(),
});
export type PairingStartResponse = z.infer<typeof PairingStartResponse>;

export const PairingWaitRequest = z.object({
  secret: PairingSecret,
  wait_seconds: WaitSeconds.optional(),
});
export type PairingWaitRequest = z.infer<typeof PairingWaitRequest>;
export const PairingWaitResponse = z.discriminatedUnion('state', [
  z.object({ state: z.literal('WAITING'), expires_at: z.string() }),
  z.object({
    state: z.literal('PAIRED'),
    terminal_id: TerminalId,
    name: z.string(),
    cohort: z.string().optional(),
    /** What the agent signs in to the broker with; a new password on every collection. */
    broker: z.object({ url: z.string(), username: z.string(), password: z.string() }),
  }),
]);
export type PairingWaitResponse = z.infer<typeof PairingWaitResponse>;

export const TerminalClaimRequest = z.object({
  /** The account acted for: the operator names one; an account's own credential may name itself. */
  account_id: AccountId.optional(),
  code: PairingCode,
  name: TerminalName.optional(),
  cohort: CohortId.optional(),
  printer: z.boolean().optional(),
  battery: z.boolean().optional(),
});
export type TerminalClaimRequest = z.infer<typeof TerminalClaimRequest>;
/** The new terminal and its POS credential (the password shown this once). */
export const TerminalClaimResponse = z.object({
  terminal_id: TerminalId,
  name: z.string(),
  cohort: z.string().optional(),
  username: z.string(),
  password: z.string(),
});
export type TerminalClaimResponse = z.infer<typeof TerminalClaimResponse>;

/** The agent's operations: unauthenticated, under the same base address as the API's. */
export const PAIRING_OPERATIONS = {
  '/pairing/start': {
    summary:
      'An agent without a credential asks for a pairing code, naming the SHA-256 of a secret only it knows.',
    request: PairingStartRequest,
    response: PairingStartResponse,
    errors: [400, 413, 415, 429, 500],
  },
  '/pairing/wait': {
    summary:
      'The agent waits (up to wait_seconds) for its code to be claimed, then receives its broker credential.',
    request: PairingWaitRequest,
    response: PairingWaitResponse,
    errors: [400, 404, 410, 413, 415, 429, 500],
  },
} as const;
export type PairingOperationPath = keyof typeof PAIRING_OPERATIONS;
