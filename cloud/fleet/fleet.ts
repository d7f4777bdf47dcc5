/**
 * The relay's fleet part, wired: its MQTT client (fleet-link.ts), desired configuration
 * (configs.ts), remote diagnostics (diagnostics.ts) and fleet facts (facts.ts).
 */
import type { Logger } from 'pino';
import type { FleetFactsRequest, TerminalFacts } from '../../protocol/index.js';
import {
  maskConfigReportText,
  maskDiagnosticReplyText,
  maskFactsText,
} from '../../protocol/free-text.js';
import type { Clock, Timers } from '../../common/clock.js';
import type { Principal } from '../accounts/principal.js';
import type { TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { CardDataGuard } from '../terminals/card-data-guard.js';
import type { TerminalRegistry } from '../terminals/registry.js';
import { partLogger } from '../../common/logging.js';
import { FleetConfigs } from './configs.js';
import { FleetDiagnostics } from './diagnostics.js';
import { fleetFacts } from './facts.js';
import { FleetLink, type FleetLinkOptions } from './fleet-link.js';
import { LocalCredentialDelivery } from './local-credentials.js';

export interface Fleet {
  configs: FleetConfigs;
  /** Local mode's verifiers, sent with every configuration and on each credential change. */
  localCredentials: LocalCredentialDelivery;
  diagnostics: FleetDiagnostics;
  facts: (principal: Principal, request: FleetFactsRequest) => Promise<TerminalFacts[]>;
  /** Connects the fleet's MQTT client. */
  connect(): Promise<void>;
  close(): Promise<void>;
}

export function createFleet(options: {
  store: Store;
  registry: TerminalRegistry;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  link: Omit<FleetLinkOptions, 'logger'>;
  /** Whether a terminal has an agent to ask for diagnostics. */
  hasAgent: (terminal: TerminalRecord) => boolean;
  /** Masks card numbers in what agents say before it is kept or served. */
  cardData: Pick<CardDataGuard, 'masked'>;
  /** Diagnostic requests one account may have waiting at once. */
  diagnosticsPerAccount: number;
}): Fleet {
  const { store, registry, clock, timers, logger, cardData } = options;
  const failed = (what: string, terminalId: string) => (error: unknown) =>
    logger.error({ err: error, terminalId }, `could not keep the ${what}`);
  const holder: { link?: FleetLink } = {};
  const configs = new FleetConfigs({
    store,
    registry,
    publish: (terminalId, message) => {
      holder.link?.publishConfig(terminalId, message);
      localCredentials.send(terminalId, message.config);
    },
    clock,
    logger: partLogger(logger, 'config'),
  });
  const localCredentials = new LocalCredentialDelivery({
    store,
    configs,
    publish: (terminalId, message) => holder.link?.publishLocalCredentials(terminalId, message),
    logger: partLogger(logger, 'local-credentials'),
  });
  const diagnostics = new FleetDiagnostics({
    store,
    hasAgent: options.hasAgent,
    send: (terminalId, request) => holder.link?.requestDiagnostic(terminalId, request) ?? false,
    perAccount: options.diagnosticsPerAccount,
    timers,
    logger: partLogger(logger, 'diagnostics'),
  });
  const link = new FleetLink(
    { ...options.link, logger: partLogger(logger, 'link') },
    {
      configReport: (terminalId, report) =>
        void configs
          .reported(
            terminalId,
            cardData.masked(terminalId, 'config-report', maskConfigReportText(report)),
          )
          .catch(failed('configuration report', terminalId)),
      facts: (terminalId, facts) =>
        void store
          .putFleetReport({
            terminalId,
            kind: 'facts',
            body: cardData.masked(terminalId, 'facts', maskFactsText(facts)),
            receivedAt: clock.now().toISOString(),
          })
          .catch(failed('fleet facts', terminalId)),
      diagnosticReply: (terminalId, reply) =>
        diagnostics.replied(
          terminalId,
          cardData.masked(terminalId, 'diag-reply', maskDiagnosticReplyText(reply)),
        ),
    },
  );
  holder.link = link;
  return {
    configs,
    localCredentials,
    diagnostics,
    facts: (principal, request) => fleetFacts({ store, registry, clock }, principal, request),
    connect: () => link.connect(),
    async close() {
      diagnostics.close();
      await configs.close();
      await link.close();
    },
  };
}
