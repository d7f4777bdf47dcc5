/** The handlers of every operation in protocol/operations.ts, for one revision. */
import type { FastifyRequest } from 'fastify';
import {
  formatTimestamp,
  renderTerminalStatus,
  renderTransaction,
  requestedWaitSeconds,
  type AccountCreateRequest,
  type AccountIdRequest,
  type ConfirmRequest,
  type ContinueRequest,
  type AccountCredentialAddRequest,
  type CredentialRequest,
  type EventListRequest,
  type GetRequest,
  type LocalTrustRequest,
  type OperationPath,
  type PrintRequest,
  type PurchaseRequest,
  type ReaderProtocol,
  type SimulatorCreateRequest,
  type WebhookCreateRequest,
  type WebhookView,
  type RefundRequest,
  type TransactionSearchRequest,
  type Revision,
  type TerminalClaimRequest,
  type TerminalCreateRequest,
  type DiagnosticsRequest,
  type FleetConfigGetRequest,
  type FleetConfigSetRequest,
  type FleetFactsRequest,
  type MerchantSettingsSetRequest,
  type TerminalFacts,
} from '../../protocol/index.js';
import type { Pairings } from '../pairing/pairings.js';
import type { FleetConfigs } from '../fleet/configs.js';
import type { FleetDiagnostics } from '../fleet/diagnostics.js';
import type { FleetEndOfDay } from '../fleet/end-of-day.js';
import type { FleetEndOfDayRequest } from '../../protocol/settlement.js';
import type { AccountAdmin } from '../accounts/accounts-admin.js';
import { actingFor, actingRelayWide } from '../accounts/roles.js';
import type { CredentialAdmin } from '../accounts/credentials.js';
import type { Cancellation } from '../cancellation.js';
import { ApiError } from '../errors.js';
import type { TransactionRecord } from '../store/records.js';
import type { TerminalRecord } from '../store/records.js';
import type { EventLog } from '../events/event-list.js';
import type { Webhooks } from '../events/webhooks.js';
import type { PrintSpooler } from '../terminals/print-spooler.js';
import type { TerminalRegistry } from '../terminals/registry.js';
import type { Principal } from '../accounts/principal.js';
import type { LocalCertificates } from '../local-tls/local-certificates.js';
import type { TransactionService } from '../transactions/service.js';

export interface OperationDeps {
  service: TransactionService;
  registry: TerminalRegistry;
  spooler: PrintSpooler;
  events: EventLog;
  webhooks: Webhooks;
  pairings: Pairings;
  credentials: CredentialAdmin;
  accounts: AccountAdmin;
  fleet: {
    configs: FleetConfigs;
    diagnostics: FleetDiagnostics;
    facts: (principal: Principal, request: FleetFactsRequest) => Promise<TerminalFacts[]>;
    endOfDay: FleetEndOfDay;
  };
  localCertificates: Pick<LocalCertificates, 'trust'>;
  /** The broker address agents are told to use. */
  agentBrokerUrl: () => string;
  /** Brings a newly created simulated terminal to life. */
  startSimulator(terminal: TerminalRecord): Promise<void>;
  /** The readers simulated terminals can drive: the agent path drives both. */
  simulatorReaders: readonly ReaderProtocol[];
  defaultWaitSeconds: number;
}

export interface OperationContext {
  revision: Revision;
  principal: Principal;
  /** Cancelled when the client goes away, so long polls free their resources. */
  gone: Cancellation;
  request: FastifyRequest;
}

// Each handler receives the body its operation's request schema has already parsed.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Handler = (body: any, ctx: OperationContext) => Promise<unknown>;

/** Webhook timestamps in the revision's shape. */
function webhookIn(revision: Revision, webhook: WebhookView): WebhookView {
  return {
    ...webhook,
    created_at: formatTimestamp(webhook.created_at, revision),
    ...(webhook.failing_since
      ? { failing_since: formatTimestamp(webhook.failing_since, revision) }
      : {}),
  };
}

export function operationHandlers(deps: OperationDeps): Record<OperationPath, Handler> {
  const { service } = deps;
  const acting = (ctx: OperationContext, body: { account_id?: string | undefined }) =>
    actingFor(ctx.principal, body.account_id, (id) => deps.accounts.isMerchant(id));

  const render = async (
    record: TransactionRecord,
    revision: Revision,
    withRefundable: boolean,
  ) => ({
    transaction: renderTransaction(
      record.txn,
      revision,
      withRefundable ? await service.refundable(record) : undefined,
    ),
  });

  const waitMs = (body: Parameters<typeof requestedWaitSeconds>[0]) =>
    requestedWaitSeconds(body, deps.defaultWaitSeconds) * 1000;

  const createAndWait =
    (kind: 'PURCHASE' | 'REFUND') =>
    async (body: PurchaseRequest & RefundRequest, ctx: OperationContext) => {
      service.checkParking(ctx.principal, waitMs(body));
      const created = await service.create(
        ctx.principal,
        kind === 'PURCHASE' ? { kind, request: body } : { kind, request: body },
      );
      const record = await service.waitWhileProcessing(
        ctx.principal,
        body.terminal_id,
        body.external_id,
        waitMs(body),
        ctx.gone,
        created,
      );
      return render(record, ctx.revision, false);
    };

  return {
    '/transaction/purchase': createAndWait('PURCHASE'),
    '/transaction/refund': createAndWait('REFUND'),

    // A confirm has no wait of its own: a terminal in local mode gets the default wait to answer.
    '/transaction/confirm': async (body: ConfirmRequest, ctx) =>
      render(
        await service.confirm(ctx.principal, body, deps.defaultWaitSeconds * 1000, ctx.gone),
        ctx.revision,
        false,
      ),

    '/transaction/get': async (body: GetRequest, ctx) => {
      const record = await service.waitWhileProcessing(
        ctx.principal,
        body.terminal_id,
        body.external_id,
        waitMs(body),
        ctx.gone,
      );
      const withRefundable = ctx.revision === 'v0' || body.options?.extra_amounts === true;
      return render(record, ctx.revision, withRefundable);
    },

    '/transaction/continue': async (body: ContinueRequest, ctx) => {
      service.checkParking(ctx.principal, waitMs(body));
      // A terminal in local mode gets the default wait to decide it, as a confirm.
      const continued = await service.continue(
        ctx.principal,
        body,
        deps.defaultWaitSeconds * 1000,
        ctx.gone,
      );
      const record = await service.waitWhileProcessing(
        ctx.principal,
        body.terminal_id,
        body.external_id,
        waitMs(body),
        ctx.gone,
        continued,
      );
      return render(record, ctx.revision, false);
    },

    '/transaction/unconfirmed': async (body: { terminal_id: string }, ctx) => {
      const records = await service.unconfirmed(ctx.principal, body.terminal_id);
      return { transactions: records.map((r) => renderTransaction(r.txn, ctx.revision)) };
    },

    '/transaction/search': async (body: TransactionSearchRequest, ctx) => {
      const { records, nextCursor } = await service.search(ctx.principal, body);
      return {
        transactions: records.map((r) => renderTransaction(r.txn, ctx.revision)),
        ...(nextCursor ? { next_cursor: nextCursor } : {}),
      };
    },

    '/terminal/status': async (body: { terminal_id: string }, ctx) => {
      const terminal = await service.authorizeTerminal(
        ctx.principal,
        body.terminal_id,
        () => new ApiError('TERMINAL_NOT_FOUND', `no terminal ${body.terminal_id}`),
      );
      return { status: renderTerminalStatus(terminal.status, ctx.revision) };
    },

    '/terminal/list': async (_body: unknown, ctx) => {
      const { accountId, terminalId } = ctx.principal;
      const terminals = await deps.registry.listTerminals(accountId, terminalId);
      return {
        terminals: terminals.map((terminal) => ({
          terminal_id: terminal.id,
          kind: terminal.kind,
          status: renderTerminalStatus(terminal.status, ctx.revision),
        })),
      };
    },

    '/terminal/local-trust': async (body: LocalTrustRequest, ctx) =>
      deps.localCertificates.trust(ctx.principal, body.terminal_id),

    '/terminal/print': async (body: PrintRequest, ctx) => {
      const terminal = await service.authorizeTerminal(
        ctx.principal,
        body.terminal_id,
        () => new ApiError('TERMINAL_NOT_FOUND', `no terminal ${body.terminal_id}`),
      );
      await deps.spooler.print(terminal, body);
      return { queued: true };
    },

    '/event/list': async (body: EventListRequest, ctx) =>
      deps.events.list(
        ctx.principal,
        ctx.revision,
        body,
        // A short poll unless the reader asks to wait.
        requestedWaitSeconds(body, 0) * 1000,
        ctx.gone,
      ),

    '/webhook/create': async (body: WebhookCreateRequest, ctx) => {
      const { webhook } = await deps.webhooks.create(ctx.principal, body);
      return { webhook: { ...webhookIn(ctx.revision, webhook), secret: webhook.secret } };
    },
    '/webhook/list': async (_body: unknown, ctx) => {
      const { webhooks } = await deps.webhooks.list(ctx.principal);
      return { webhooks: webhooks.map((w) => webhookIn(ctx.revision, w)) };
    },
    '/webhook/delete': async (body: { id: string }, ctx) => ({
      webhook: webhookIn(
        ctx.revision,
        (await deps.webhooks.delete(ctx.principal, body.id)).webhook,
      ),
    }),
    '/webhook/enable': async (body: { id: string }, ctx) => ({
      webhook: webhookIn(
        ctx.revision,
        (await deps.webhooks.enable(ctx.principal, body.id)).webhook,
      ),
    }),
    '/webhook/disable': async (body: { id: string }, ctx) => ({
      webhook: webhookIn(
        ctx.revision,
        (await deps.webhooks.disable(ctx.principal, body.id)).webhook,
      ),
    }),

    // The operator acts for the account it names; an account credential for its own.
    '/credential/revoke': async (body: CredentialRequest, ctx) =>
      deps.credentials.revoke(await acting(ctx, body), body),
    '/credential/rotate': async (body: CredentialRequest, ctx) =>
      deps.credentials.rotate(await acting(ctx, body), body),
    '/account/credential/add': async (body: AccountCredentialAddRequest, ctx) =>
      deps.credentials.addAccountCredential(await acting(ctx, body)),

    '/account/create': async (body: AccountCreateRequest) => deps.accounts.create(body),
    '/account/list': async () => ({ accounts: await deps.accounts.list() }),
    '/account/get': async (body: AccountIdRequest) => ({
      account: await deps.accounts.get(body.account_id),
    }),
    '/account/disable': async (body: AccountIdRequest) => ({
      account: await deps.accounts.setDisabled(body.account_id, true),
    }),
    '/account/enable': async (body: AccountIdRequest) => ({
      account: await deps.accounts.setDisabled(body.account_id, false),
    }),

    '/terminal/create': async (body: TerminalCreateRequest, ctx) => {
      if (ctx.principal.terminalId !== undefined) {
        throw new ApiError('FORBIDDEN', 'only an account credential can register terminals');
      }
      const { accountId } = await acting(ctx, body);
      const { issued, agentSecret } = await deps.registry.createAgentTerminal(accountId, {
        printer: body.printer ?? false,
        battery: body.battery ?? false,
      });
      return {
        ...issued,
        agent: {
          broker_url: deps.agentBrokerUrl(),
          username: issued.terminal_id,
          password: agentSecret,
        },
      };
    },

    // The operator acts for the account it names; an account credential for its own.
    '/terminal/claim': async (body: TerminalClaimRequest, ctx) =>
      deps.pairings.claim(await acting(ctx, body), body),

    // The relay-wide layer is the operator's alone; the others are an account's.
    '/fleet/config/set': async (body: FleetConfigSetRequest, ctx) => {
      const { scope } = body;
      if (!('relay' in scope)) {
        return deps.fleet.configs.set(await acting(ctx, body), scope, body.config);
      }
      actingRelayWide(ctx.principal, body.account_id);
      return deps.fleet.configs.setRelay(body.config);
    },
    '/fleet/config/get': async (body: FleetConfigGetRequest, ctx) => {
      const { scope } = body;
      if (!('relay' in scope)) return deps.fleet.configs.get(await acting(ctx, body), scope);
      actingRelayWide(ctx.principal, body.account_id);
      return deps.fleet.configs.getRelay();
    },
    '/fleet/config/merchant-settings/get': async () => deps.fleet.configs.merchantSettings(),
    '/fleet/config/merchant-settings/set': async (body: MerchantSettingsSetRequest) =>
      deps.fleet.configs.setMerchantSettings(body.settings),
    '/fleet/facts': async (body: FleetFactsRequest, ctx) => ({
      terminals: await deps.fleet.facts(await acting(ctx, body), body),
    }),
    '/fleet/end-of-day': async (body: FleetEndOfDayRequest, ctx) =>
      deps.fleet.endOfDay.request(await acting(ctx, body), body),
    '/fleet/diagnostics': async (body: DiagnosticsRequest, ctx) =>
      deps.fleet.diagnostics.request(await acting(ctx, body), body, ctx.gone),

    '/simulator/create': async (body: SimulatorCreateRequest | undefined, ctx) => {
      if (ctx.principal.terminalId !== undefined) {
        throw new ApiError('FORBIDDEN', 'only an account credential can create simulators');
      }
      const readerProtocol = body?.reader_protocol ?? 'native';
      if (!deps.simulatorReaders.includes(readerProtocol)) {
        throw new ApiError(
          'INVALID_REQUEST',
          `reader_protocol: simulated terminals of this relay drive only ${deps.simulatorReaders.join(', ')} readers (a ZVT terminal needs TPS_SIMULATOR_MODE=agent)`,
        );
      }
      const { terminal, issued } = await deps.registry.createSimulator(
        ctx.principal.accountId,
        readerProtocol,
      );
      await deps.startSimulator(terminal);
      return issued;
    },
  };
}
