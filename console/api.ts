/**
 * The console's way to the relay: the API's own operations (/pos/v1/…), authenticated by
 * the session cookie plus the session's CSRF token header, exactly as any POS calls them.
 */
import type {
  AccountView,
  ConfigScope,
  DiagnosticKind,
  DiagnosticsResponse,
  EventListRequest,
  FleetConfig,
  FleetConfigResponse,
  TerminalClaimResponse,
  TerminalFacts,
  PurchaseRequest,
  ReleaseView,
  RolloutStartRequest,
  RolloutView,
  Transaction,
  TerminalSettlement,
  TerminalStatus,
  TransactionSearchRequest,
  WebhookCreateRequest,
  WebhookView,
} from '../protocol/index.js';

export const CSRF_HEADER = 'x-tps-csrf';
// As protocol/'s RELEASE_PUBLISH_PATH and ROLLOUTS_PATH: nothing of it ships in the bundle.
const RELEASES = '/pos/v1/fleet/releases';
const ROLLOUTS = '/pos/v1/fleet/rollouts';

export interface SessionView {
  username: string;
  account_id: string;
  terminal_id?: string;
  /** operator, account or terminal (docs/tenants.md): which pages the console shows. */
  role: 'operator' | 'account' | 'terminal';
  csrf_token: string;
  expires_at: string;
}

export interface TerminalView {
  terminal_id: string;
  kind: 'SIMULATOR' | 'AGENT';
  status: TerminalStatus;
}

export interface CloudEventView {
  id: string;
  type: string;
  time?: string;
  subject?: string;
  data: Transaction | TerminalStatus | TerminalSettlement;
}

/** An answer other than 2xx, with the spec's error code when there was one. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

let session: SessionView | undefined;
/** Called when the relay says the session is over. */
let onSignedOut: () => void = () => undefined;

export const currentSession = () => session;
export const whenSignedOut = (handler: () => void) => (onSignedOut = handler);

/** A request's body as sent: JSON, or a file as it is (a release archive). */
interface Payload {
  type: string;
  data: string | Blob;
}

const json = (body: unknown): Payload | undefined =>
  body === undefined ? undefined : { type: 'application/json', data: JSON.stringify(body) };

async function send(
  method: 'GET' | 'POST',
  url: string,
  payload?: Payload,
  signal?: AbortSignal,
): Promise<unknown> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (payload) headers['content-type'] = payload.type;
  if (session) headers[CSRF_HEADER] = session.csrf_token;
  const response = await fetch(url, {
    method,
    headers,
    credentials: 'same-origin',
    ...(payload ? { body: payload.data } : {}),
    ...(signal ? { signal } : {}),
  });
  const answer = (await response.json().catch(() => ({}))) as {
    error?: { code?: string; description?: string };
  };
  if (!response.ok) {
    const failure = new ApiFailure(
      response.status,
      answer.error?.code ?? 'HTTP_' + response.status,
      answer.error?.description ?? response.statusText,
    );
    if (response.status === 401 && session && !url.startsWith('/console/session')) {
      session = undefined;
      onSignedOut();
    }
    throw failure;
  }
  return answer;
}

export async function restoreSession(): Promise<SessionView | undefined> {
  try {
    session = (await send('GET', '/console/session')) as SessionView;
  } catch {
    session = undefined;
  }
  return session;
}

export async function signIn(username: string, password: string): Promise<SessionView> {
  session = undefined;
  session = (await send('POST', '/console/session', json({ username, password }))) as SessionView;
  return session;
}

export async function signOut(): Promise<void> {
  await send('POST', '/console/session/end', json({})).catch(() => undefined);
  session = undefined;
}

/** One API operation of revision v1. */
export const call = <T>(operation: string, body: unknown, signal?: AbortSignal) =>
  send('POST', `/pos/v1${operation}`, json(body), signal) as Promise<T>;

/**
 * Releases and rollouts (docs/api.md, "Extensions"): resources of their own beside the
 * operations, read with GET; a release is published as the archive itself.
 */
export const releasesAndRollouts = {
  list: () => send('GET', RELEASES) as Promise<{ releases: ReleaseView[] }>,
  publish: (archive: Blob) =>
    send('POST', RELEASES, { type: 'application/gzip', data: archive }) as Promise<{
      release: ReleaseView;
    }>,
  rollouts: (account_id?: string) =>
    send(
      'GET',
      `${ROLLOUTS}${account_id ? `?account_id=${encodeURIComponent(account_id)}` : ''}`,
    ) as Promise<{ rollouts: RolloutView[] }>,
  rollout: (id: string) =>
    send('GET', `${ROLLOUTS}/${encodeURIComponent(id)}`) as Promise<{ rollout: RolloutView }>,
  start: (request: RolloutStartRequest) =>
    send('POST', ROLLOUTS, json(request)) as Promise<{ rollout: RolloutView }>,
  act: (id: string, action: 'pause' | 'resume') =>
    send('POST', `${ROLLOUTS}/${encodeURIComponent(id)}/${action}`, json({})) as Promise<{
      rollout: RolloutView;
    }>,
};

export const api = {
  terminals: () => call<{ terminals: TerminalView[] }>('/terminal/list', {}),
  status: (terminal_id: string) =>
    call<{ status: TerminalStatus }>('/terminal/status', { terminal_id }),
  unconfirmed: (terminal_id: string) =>
    call<{ transactions: Transaction[] }>('/transaction/unconfirmed', { terminal_id }),
  get: (terminal_id: string, external_id: string) =>
    call<{ transaction: Transaction }>('/transaction/get', {
      terminal_id,
      external_id,
      wait_seconds: 0,
    }),
  purchase: (request: PurchaseRequest) =>
    call<{ transaction: Transaction }>('/transaction/purchase', request),
  confirm: (terminal_id: string, external_id: string, result_code: string) =>
    call<{ transaction: Transaction }>('/transaction/confirm', {
      terminal_id,
      external_id,
      result_code,
    }),
  continue: (terminal_id: string, external_id: string) =>
    call<{ transaction: Transaction }>('/transaction/continue', {
      terminal_id,
      external_id,
      wait_seconds: 0,
    }),
  events: (request: EventListRequest, signal?: AbortSignal) =>
    call<{ events: CloudEventView[]; next_token: string }>('/event/list', request, signal),
  search: (request: TransactionSearchRequest) =>
    call<{ transactions: Transaction[]; next_cursor?: string }>('/transaction/search', request),
  endOfDay: (terminal_id: string) =>
    call<{ terminal_ids: string[] }>('/fleet/end-of-day', { terminal_id }),
  print: (terminal_id: string, contents: string) =>
    call<{ queued: boolean }>('/terminal/print', { terminal_id, contents, format: 'PNG' }),
  simulatorCreate: () =>
    call<{ terminal_id: string; username: string; password: string }>('/simulator/create', {}),
  webhooks: () => call<{ webhooks: WebhookView[] }>('/webhook/list', {}),
  accounts: () => call<{ accounts: AccountView[] }>('/account/list', {}),
  accountCreate: (name: string) =>
    call<{ account: AccountView; credential: { username: string; password: string } }>(
      '/account/create',
      { name },
    ),
  accountSet: (account_id: string, disabled: boolean) =>
    call<{ account: AccountView }>(disabled ? '/account/disable' : '/account/enable', {
      account_id,
    }),
  // The fleet's operations: `account_id` is the account the operator acts for (undefined
  // for a merchant, which acts for its own).
  facts: (account_id?: string) =>
    call<{ terminals: TerminalFacts[] }>('/fleet/facts', { account_id }),
  terminalFacts: (terminal_id: string, account_id?: string) =>
    call<{ terminals: TerminalFacts[] }>('/fleet/facts', { account_id, terminal_id }),
  configGet: (scope: ConfigScope, account_id?: string) =>
    call<FleetConfigResponse>('/fleet/config/get', { account_id, scope }),
  configSet: (scope: ConfigScope, config: FleetConfig, account_id?: string) =>
    call<FleetConfigResponse>('/fleet/config/set', { account_id, scope, config }),
  claim: (request: { code: string; name?: string; cohort?: string; account_id?: string }) =>
    call<TerminalClaimResponse>('/terminal/claim', request),
  diagnostics: (terminal_id: string, kind: DiagnosticKind, account_id?: string) =>
    call<DiagnosticsResponse>('/fleet/diagnostics', {
      account_id,
      terminal_id,
      kind,
      ...(kind === 'logs' ? { lines: 200 } : {}),
      wait_seconds: 15,
    }),
  webhookCreate: (request: WebhookCreateRequest) =>
    call<{ webhook: WebhookView & { secret: string } }>('/webhook/create', request),
  webhookEnable: (id: string) => call<{ webhook: WebhookView }>('/webhook/enable', { id }),
  webhookDisable: (id: string) => call<{ webhook: WebhookView }>('/webhook/disable', { id }),
  webhookDelete: (id: string) => call<{ webhook: WebhookView }>('/webhook/delete', { id }),
};

export const isTransactionEvent = (
  event: CloudEventView,
): event is CloudEventView & { data: Transaction } => event.type.endsWith('.Transaction');
export const isStatusEvent = (
  event: CloudEventView,
): event is CloudEventView & { data: TerminalStatus } => event.type.endsWith('.TerminalStatus');
export const isSettlementEvent = (
  event: CloudEventView,
): event is CloudEventView & { data: TerminalSettlement } =>
  event.type.endsWith('.TerminalSettlement');
