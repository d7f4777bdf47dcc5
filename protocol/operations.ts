/**
 * Every operation of the API: its path under the revision's base address, request body
 * and 200 answer per revision. The relay binds its handlers to this table and generates
 * the OpenAPI documents from it; clients can use it to validate what they send.
 */
import { z } from 'zod';
import type { responseSchemas } from './api.js';
import {
  ConfirmRequest,
  ContinueRequest,
  GetRequest,
  PrintRequest,
  PurchaseRequest,
  RefundRequest,
  SimulatorCreateRequest,
  SimulatorCreateResponse,
  TerminalCreateRequest,
  TerminalListRequest,
  TransactionSearchRequest,
  TerminalStatusRequest,
  UnconfirmedRequest,
} from './api.js';
import type { Revision } from './fields.js';
import { EventListRequest, WebhookCreateRequest, WebhookIdRequest } from './events.js';
import { TerminalClaimRequest, TerminalClaimResponse } from './pairing.js';
import {
  FleetConfigGetRequest,
  FleetConfigResponse,
  FleetConfigSetRequest,
  MerchantSettingsResponse,
  MerchantSettingsSetRequest,
} from './fleet-config.js';
import {
  DiagnosticsRequest,
  DiagnosticsResponse,
  FleetFactsRequest,
  FleetFactsResponse,
} from './fleet-diagnostics.js';
import { FleetEndOfDayRequest, FleetEndOfDayResponse } from './settlement.js';
import { LocalTrustRequest, LocalTrustResponse } from './local-tls.js';
import {
  AccountCreateRequest,
  AccountCreateResponse,
  AccountIdRequest,
  AccountListResponse,
  AccountResponse,
} from './accounts.js';
import {
  AccountCredentialAddRequest,
  AccountCredentialAddResponse,
  CredentialRequest,
  CredentialRevokeResponse,
  CredentialRotateResponse,
} from './credentials.js';

type Responses = ReturnType<typeof responseSchemas>;

export interface OperationSpec {
  summary: string;
  request: z.ZodType;
  response: (responses: Responses) => z.ZodType;
  /** HTTP statuses besides 200 that the operation answers with the error object. */
  errors: readonly number[];
}

/** What any operation may answer before its own checks: authentication, method, body, load. */
const AUTH = [401, 405, 413, 415, 429, 503] as const;

export const OPERATIONS = {
  '/transaction/purchase': {
    summary:
      'Start a purchase, or answer the current state of the same (terminal_id, external_id).',
    request: PurchaseRequest,
    response: (r) => r.transaction,
    errors: [400, ...AUTH, 500],
  },
  '/transaction/refund': {
    summary: 'Start a refund, or answer the current state of the same (terminal_id, external_id).',
    request: RefundRequest,
    response: (r) => r.transaction,
    errors: [400, ...AUTH, 500],
  },
  '/transaction/confirm': {
    summary: 'Confirm the final result as successful or failed.',
    request: ConfirmRequest,
    response: (r) => r.transaction,
    errors: [400, ...AUTH, 500],
  },
  '/transaction/get': {
    summary: 'Answer the current snapshot, waiting up to wait_seconds while PROCESSING.',
    request: GetRequest,
    response: (r) => r.transaction,
    errors: [400, 404, ...AUTH, 500],
  },
  '/transaction/continue': {
    summary: 'Continue a transaction paused in AWAITING_CONTINUE.',
    request: ContinueRequest,
    response: (r) => r.transaction,
    errors: [400, ...AUTH, 500],
  },
  '/transaction/unconfirmed': {
    summary: 'List the transactions of a terminal that are not yet confirmed.',
    request: UnconfirmedRequest,
    response: (r) => r.transactions,
    errors: [400, 404, ...AUTH, 500],
  },
  '/transaction/search': {
    summary:
      'Search the transactions this credential reaches, newest first, a page at a time (an extension of this service).',
    request: TransactionSearchRequest,
    response: (r) => r.search,
    errors: [400, ...AUTH, 500],
  },
  '/terminal/status': {
    summary: 'Answer the status of a terminal.',
    request: TerminalStatusRequest,
    response: (r) => r.status,
    errors: [400, ...AUTH, 500],
  },
  '/terminal/list': {
    summary:
      'List the terminals this credential reaches, with their status (an extension of this service).',
    request: TerminalListRequest,
    response: (r) => r.terminals,
    errors: [400, ...AUTH, 500],
  },
  '/terminal/print': {
    summary: 'Queue a PNG for the terminal receipt printer.',
    request: PrintRequest,
    response: (r) => r.print,
    errors: [400, ...AUTH, 500],
  },
  '/terminal/local-trust': {
    summary:
      "What a POS must trust to reach the terminal's agent on the shop's network over HTTPS: its account's certificate authority, the addresses the agent reported and when its certificate ends (an extension of this service).",
    request: LocalTrustRequest,
    response: () => LocalTrustResponse,
    errors: [400, ...AUTH, 500],
  },
  '/terminal/create': {
    summary:
      'Register a real terminal: answers its id, a POS credential and the agent credential (passwords shown once).',
    request: TerminalCreateRequest,
    response: (r) => r.terminalCreated,
    errors: [400, 403, 404, ...AUTH, 500],
  },
  '/terminal/claim': {
    summary:
      'Claim the pairing code a new terminal shows: it joins this account with the name and cohort given; answers its POS credential (password shown once).',
    request: TerminalClaimRequest,
    response: () => TerminalClaimResponse,
    errors: [400, 403, 404, 409, 410, ...AUTH, 500],
  },
  '/simulator/create': {
    summary: 'Create a simulated terminal; the password is shown this once.',
    request: SimulatorCreateRequest,
    response: () => SimulatorCreateResponse,
    errors: [400, 403, ...AUTH, 500],
  },
  '/event/list': {
    summary:
      'Read transaction and terminal-status events in order; next_token continues, wait_seconds long-polls.',
    request: EventListRequest,
    response: (r) => r.events,
    errors: [400, 410, ...AUTH, 500],
  },
  '/webhook/create': {
    summary:
      'Register an endpoint that receives matching events, signed; the secret is shown once.',
    request: WebhookCreateRequest,
    response: (r) => r.webhookCreated,
    errors: [400, ...AUTH, 500],
  },
  '/webhook/list': {
    summary: 'List the webhooks of this credential, with their delivery state.',
    request: z.object({}),
    response: (r) => r.webhooks,
    errors: [400, ...AUTH, 500],
  },
  '/webhook/delete': {
    summary: 'Remove a webhook.',
    request: WebhookIdRequest,
    response: (r) => r.webhook,
    errors: [400, 404, ...AUTH, 500],
  },
  '/webhook/enable': {
    summary: 'Re-enable a webhook that was disabled; delivery resumes where it stopped.',
    request: WebhookIdRequest,
    response: (r) => r.webhook,
    errors: [400, 404, ...AUTH, 500],
  },
  '/webhook/disable': {
    summary:
      'Stop deliveries to a webhook without deleting it; enable resumes where it stopped (events older than retention are gone by then).',
    request: WebhookIdRequest,
    response: (r) => r.webhook,
    errors: [400, 404, ...AUTH, 500],
  },
  '/credential/revoke': {
    summary:
      "Revoke one of the account's credentials (account, terminal or terminal agent): it stops signing in on every relay, and the agent's live session ends.",
    request: CredentialRequest,
    response: () => CredentialRevokeResponse,
    errors: [400, 403, 404, ...AUTH, 500],
  },
  '/credential/rotate': {
    summary:
      "Replace the secret of an account credential, a terminal's or its agent's; the new one is shown once and the old one stops signing in.",
    request: CredentialRequest,
    response: () => CredentialRotateResponse,
    errors: [400, 403, 404, ...AUTH, 500],
  },
  '/account/credential/add': {
    summary:
      'Add an account credential to an account (the operator names it; a merchant adds one to its own), its password shown once (an extension of this service).',
    request: AccountCredentialAddRequest,
    response: () => AccountCredentialAddResponse,
    errors: [400, 403, 404, ...AUTH, 500],
  },
  '/account/create': {
    summary:
      "Create a merchant account and its account credential, shown once (the operator's; an extension of this service).",
    request: AccountCreateRequest,
    response: () => AccountCreateResponse,
    errors: [400, 403, ...AUTH, 500],
  },
  '/account/list': {
    summary: "List the relay's accounts (the operator's; an extension of this service).",
    request: z.strictObject({}),
    response: () => AccountListResponse,
    errors: [400, 403, ...AUTH, 500],
  },
  '/account/get': {
    summary: "Read one account (the operator's; an extension of this service).",
    request: AccountIdRequest,
    response: () => AccountResponse,
    errors: [400, 403, 404, ...AUTH, 500],
  },
  '/account/disable': {
    summary:
      "Disable a merchant account: its credentials, its terminals' POS credentials and its console sessions are refused on every relay at once, its webhooks stop; nothing is deleted (the operator's; an extension of this service).",
    request: AccountIdRequest,
    response: () => AccountResponse,
    errors: [400, 403, 404, ...AUTH, 500],
  },
  '/account/enable': {
    summary:
      "Enable a disabled merchant account again, with its credentials as they were (the operator's; an extension of this service).",
    request: AccountIdRequest,
    response: () => AccountResponse,
    errors: [400, 403, 404, ...AUTH, 500],
  },
  '/fleet/config/set': {
    summary:
      "Replace a layer of desired configuration (the relay's, the account's, a cohort's or a terminal's) and push the result to the terminals it reaches; answers them with desired, reported and whether they agree (an extension of this service).",
    request: FleetConfigSetRequest,
    response: () => FleetConfigResponse,
    errors: [400, 403, ...AUTH, 500],
  },
  '/fleet/config/get': {
    summary:
      'Read a layer of desired configuration and, for each terminal it reaches, desired, reported and whether they agree (an extension of this service).',
    request: FleetConfigGetRequest,
    response: () => FleetConfigResponse,
    errors: [400, 403, ...AUTH, 500],
  },
  '/fleet/config/merchant-settings/get': {
    summary:
      "Read which settings of desired configuration merchants may set in their own layers (the operator's; an extension of this service).",
    request: z.strictObject({}),
    response: () => MerchantSettingsResponse,
    errors: [400, 403, ...AUTH, 500],
  },
  '/fleet/config/merchant-settings/set': {
    summary:
      "Set which settings of desired configuration merchants may set in their own layers, and push the resulting configuration to every terminal (the operator's; an extension of this service).",
    request: MerchantSettingsSetRequest,
    response: () => MerchantSettingsResponse,
    errors: [400, 403, ...AUTH, 500],
  },
  '/fleet/facts': {
    summary:
      'What a field engineer needs of each terminal: agent version, reader model and firmware, configuration version, last update outcome, last seen (an extension of this service).',
    request: FleetFactsRequest,
    response: () => FleetFactsResponse,
    errors: [400, 403, ...AUTH, 500],
  },
  '/fleet/end-of-day': {
    summary:
      'Close the day of a terminal or of each terminal of a cohort (ZVT end-of-day): queued for each agent, which runs it when no payment runs and reports a TerminalSettlement event (an extension of this service).',
    request: FleetEndOfDayRequest,
    response: () => FleetEndOfDayResponse,
    errors: [400, 403, 404, ...AUTH, 500],
  },
  '/fleet/diagnostics': {
    summary:
      "Ask a connected terminal's agent for its doctor checks, its last log lines or the reader line of its last payment, redacted; waits up to wait_seconds (an extension of this service).",
    request: DiagnosticsRequest,
    response: () => DiagnosticsResponse,
    errors: [400, 403, 409, 502, 504, ...AUTH, 500],
  },
} as const satisfies Record<string, OperationSpec>;

export type OperationPath = keyof typeof OPERATIONS;

export const basePath = (revision: Revision) => `/pos/${revision}`;
