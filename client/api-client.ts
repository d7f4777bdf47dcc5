/**
 * A typed client for every operation of both revisions. Bodies are checked against
 * protocol/'s request schemas before anything is sent; answers against its response
 * schemas (leniently: see lenientParser). Creates, confirms and reads are repeated on
 * network errors, time-outs and 5xx; continue, print and simulator creation never are.
 */
import { z } from 'zod';
import {
  ConfirmRequest,
  ContinueRequest,
  EventListRequest,
  LocalTrustRequest,
  LocalTrustResponse,
  GetRequest,
  PrintRequest,
  PrintResponse,
  PurchaseRequest,
  RefundRequest,
  SimulatorCreateResponse,
  TerminalStatusRequest,
  UnconfirmedRequest,
  requestedWaitSeconds,
  responseSchemas,
  type Revision,
} from '../protocol/index.js';
import { TpsError } from './errors.js';
import { localTrustOf, type LocalTrust } from './local-trust.js';
import {
  Transport,
  lenientParser,
  type CallOptions,
  type LocalPath,
  type TransportOptions,
} from './http.js';
import { trustingFetch } from './local-path.js';
import type {
  ConfirmBody,
  ContinueBody,
  EventListBody,
  GetBody,
  PrintBody,
  PurchaseBody,
  RefundBody,
  SimulatorCredential,
  TerminalStatusBody,
  TerminalStatusResponse,
  TransactionResponse,
  TransactionsResponse,
  UnconfirmedBody,
  PrintResponse as PrintAnswer,
} from './types.js';

export type { CallOptions };

export interface ApiClientOptions<R extends Revision> extends Omit<
  TransportOptions,
  'baseUrl' | 'local'
> {
  /**
   * The service's base address without the version segment
   * (`http://127.0.0.1:8080/pos`); one that ends in `/v0` or `/v1` must agree with
   * `revision`.
   */
  baseUrl: string;
  /** Default `v1`, the current revision. */
  revision?: R;
  /**
   * The terminal's agent on the shop's network (docs/local-mode.md): requests the cloud
   * cannot carry go there (or there first, `prefer: 'local'`). `baseUrl` as above, e.g.
   * `https://192.168.1.20:8443/pos`; `ca`, the certificates to trust for it, and
   * `serverName`, the name its certificate must carry (the relay's `local-trust` answer:
   * `localTrust()`).
   */
  local?: Omit<LocalPath, 'baseUrl'> & {
    baseUrl: string;
    ca?: string | string[];
    serverName?: string;
  };
}

/** The service's default long-poll wait, assumed when a body names none. */
const SERVICE_DEFAULT_WAIT_S = 25;

/** An event as the list answers it: CloudEvents fields, data not yet interpreted. */
export interface RawCloudEvent {
  id: string;
  source: string;
  specversion: string;
  type: string;
  time?: string;
  subject?: string;
  datacontenttype?: string;
  data: unknown;
}
export interface EventListAnswer {
  events: RawCloudEvent[];
  next_token: string;
}

const LooseTransaction = z.looseObject({
  id: z.string(),
  external_id: z.string(),
  terminal_id: z.string(),
  state: z.string(),
});
const LooseEvent = z.looseObject({
  id: z.string(),
  type: z.string(),
  specversion: z.string(),
  source: z.string(),
});
const loose = {
  transaction: z.object({ transaction: LooseTransaction }),
  transactions: z.object({ transactions: z.array(LooseTransaction) }),
  status: z.object({ status: z.looseObject({}) }),
  events: z.object({ events: z.array(LooseEvent), next_token: z.string() }),
};

function requiredServerName(serverName: string | undefined): string {
  if (serverName !== undefined) return serverName;
  throw new TpsError({
    code: 'INVALID_ARGUMENT',
    message:
      "local.ca needs local.serverName, the terminal's name its certificate carries (localTrust() answers both)",
  });
}

/** `baseUrl` with the revision's segment; one that names another revision is refused. */
function versionedUrl(baseUrl: string, revision: Revision): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  const named = /\/(v0|v1)$/.exec(trimmed)?.[1];
  if (named !== undefined && named !== revision) {
    throw new TpsError({
      code: 'INVALID_ARGUMENT',
      message: `the base URL ${trimmed} names revision ${named} but the client uses ${revision}; pass revision: '${named}' or a base URL without the version segment`,
    });
  }
  return named ? trimmed : `${trimmed}/${revision}`;
}

export class ApiClient<R extends Revision = 'v1'> {
  readonly revision: R;
  /** Base address with the version segment. */
  readonly url: string;
  private readonly transport: Transport;
  private readonly schemas;

  constructor(options: ApiClientOptions<R>) {
    const revision = (options.revision ?? 'v1') as R;
    this.revision = revision;
    this.url = versionedUrl(options.baseUrl, revision);
    const { local, ...cloud } = options;
    this.transport = new Transport({
      ...cloud,
      baseUrl: this.url,
      ...(local
        ? {
            local: {
              ...local,
              baseUrl: versionedUrl(local.baseUrl, revision),
              ...(local.ca !== undefined && !local.fetch
                ? { fetch: trustingFetch(local.ca, requiredServerName(local.serverName)) }
                : {}),
            },
          }
        : {}),
    });
    this.schemas = responseSchemas(revision);
  }

  /** The path the next request takes first (`cloud` unless only the local path answers lately). */
  get nextPath(): 'cloud' | 'local' {
    return this.transport.nextPath;
  }

  purchase(body: PurchaseBody, call?: CallOptions): Promise<TransactionResponse<R>> {
    return this.transactionCall('/transaction/purchase', PurchaseRequest, body, true, call);
  }

  refund(body: RefundBody, call?: CallOptions): Promise<TransactionResponse<R>> {
    return this.transactionCall('/transaction/refund', RefundRequest, body, true, call);
  }

  /** Repeated on failure: a confirm repeated answers the current state. */
  confirm(body: ConfirmBody, call?: CallOptions): Promise<TransactionResponse<R>> {
    return this.transactionCall('/transaction/confirm', ConfirmRequest, body, false, call);
  }

  get(body: GetBody, call?: CallOptions): Promise<TransactionResponse<R>> {
    return this.transactionCall('/transaction/get', GetRequest, body, true, call);
  }

  /** Never repeated: a second continue would be refused with INVALID_STATE. */
  continue(body: ContinueBody, call?: CallOptions): Promise<TransactionResponse<R>> {
    return this.send(
      '/transaction/continue',
      ContinueRequest,
      body,
      { waitMs: waitMs(body), idempotent: false },
      lenientParser('/transaction/continue', this.schemas.transaction, loose.transaction),
      call,
    );
  }

  unconfirmed(body: UnconfirmedBody, call?: CallOptions): Promise<TransactionsResponse<R>> {
    return this.send(
      '/transaction/unconfirmed',
      UnconfirmedRequest,
      body,
      { waitMs: 0, idempotent: true },
      lenientParser('/transaction/unconfirmed', this.schemas.transactions, loose.transactions),
      call,
    );
  }

  terminalStatus(body: TerminalStatusBody, call?: CallOptions): Promise<TerminalStatusResponse<R>> {
    return this.send(
      '/terminal/status',
      TerminalStatusRequest,
      body,
      { waitMs: 0, idempotent: true },
      lenientParser('/terminal/status', this.schemas.status, loose.status),
      call,
    );
  }

  /**
   * What to trust for HTTPS to the terminal's agent on the shop's network (an extension):
   * `ca` for node's https `ca` option or undici's `connect.ca`, and where the agent is.
   */
  async localTrust(terminalId: string, call?: CallOptions): Promise<LocalTrust> {
    const answer = await this.send<LocalTrustResponse>(
      '/terminal/local-trust',
      LocalTrustRequest,
      { terminal_id: terminalId },
      { waitMs: 0, idempotent: true },
      lenientParser('/terminal/local-trust', LocalTrustResponse, LocalTrustResponse),
      call,
    );
    return localTrustOf(answer);
  }

  /** Never repeated: a fragment sent twice would corrupt the print job. */
  print(body: PrintBody, call?: CallOptions): Promise<PrintAnswer> {
    return this.send(
      '/terminal/print',
      PrintRequest,
      body,
      { waitMs: 0, idempotent: false },
      lenientParser('/terminal/print', PrintResponse, PrintResponse),
      call,
    );
  }

  /** Needs an account credential. Never repeated: each call creates a terminal. */
  createSimulator(call?: CallOptions): Promise<SimulatorCredential> {
    return this.send(
      '/simulator/create',
      z.object({}),
      {},
      { waitMs: 0, idempotent: false },
      lenientParser('/simulator/create', SimulatorCreateResponse, SimulatorCreateResponse),
      call,
    );
  }

  /**
   * One page of events (`POST /event/list`). Events are returned as sent; followEvents()
   * interprets them and follows the token.
   */
  listEvents(body: EventListBody, call?: CallOptions): Promise<EventListAnswer> {
    return this.send(
      '/event/list',
      EventListRequest,
      body,
      { waitMs: waitMs(body), idempotent: true },
      lenientParser('/event/list', loose.events, loose.events),
      call,
    );
  }

  private transactionCall(
    operation: string,
    schema: z.ZodType,
    body: PurchaseBody | RefundBody | ConfirmBody | GetBody,
    long: boolean,
    call?: CallOptions,
  ): Promise<TransactionResponse<R>> {
    return this.send(
      operation,
      schema,
      body,
      { waitMs: long ? waitMs(body as GetBody) : 0, idempotent: true },
      lenientParser(operation, this.schemas.transaction, loose.transaction),
      call,
    );
  }

  private send<T>(
    operation: string,
    schema: z.ZodType,
    body: unknown,
    how: { waitMs: number; idempotent: boolean },
    parse: (body: unknown) => T,
    call?: CallOptions,
  ): Promise<T> {
    const checked = schema.safeParse(body);
    if (!checked.success) {
      return Promise.reject(
        new TpsError({
          code: 'INVALID_ARGUMENT',
          operation,
          message: `${operation}: ${checked.error.issues
            .map((i) => `${i.path.join('.') || 'body'}: ${i.message}`)
            .join('; ')}`,
        }),
      );
    }
    // The body goes as the caller wrote it: members this protocol version does not know
    // are for a newer service to read.
    return this.transport.post({ operation, body, parse, ...how }, call);
  }
}

function waitMs(body: {
  wait_seconds?: number;
  wait_timeout?: number;
  options?: { wait_seconds?: number };
}): number {
  return requestedWaitSeconds(body, SERVICE_DEFAULT_WAIT_S) * 1000;
}
