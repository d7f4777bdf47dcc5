/**
 * Local mode's POS credential verifiers (protocol/local-credentials.ts; docs/local-mode.md,
 * "Credentials and trust"), sent to a terminal's agent on its retained `local-credentials`
 * topic: the whole set with the store's revision of it, whenever the agent comes online,
 * its configuration is sent, or one of its POS credentials is issued, rotated or revoked
 * (from the relay that committed the change: the broker is shared). Only a terminal whose
 * effective configuration turns local mode on gets verifiers; any other, or one of a
 * disabled account, gets the empty set, so a terminal that turns it off (or whose account
 * is disabled) drops what it held (docs/security.md).
 */
import type { Logger } from 'pino';
import {
  GeneratedSecretVerifier,
  localApiSettings,
  type FleetConfig,
  type LocalCredentialsMessage,
} from '../../protocol/index.js';
import type { Store } from '../store/store.js';
import type { FleetConfigs } from './configs.js';

export interface LocalCredentialDeliveryOptions {
  store: Store;
  configs: Pick<FleetConfigs, 'desired'>;
  publish(terminalId: string, message: LocalCredentialsMessage): void;
  logger: Logger;
}

export class LocalCredentialDelivery {
  constructor(private readonly options: LocalCredentialDeliveryOptions) {}

  /** The set the terminal's agent should hold, under `config` (default: its effective one). */
  async message(terminalId: string, config?: FleetConfig): Promise<LocalCredentialsMessage> {
    const { store, configs, logger } = this.options;
    const set = await store.terminalCredentials(terminalId);
    const terminal = await store.getTerminal(terminalId);
    if (config === undefined) config = terminal ? (await configs.desired(terminal)).config : {};
    // A disabled account's terminals take no payment on the LAN either (docs/tenants.md).
    const disabled = terminal && (await store.getAccount(terminal.accountId))?.disabledAt;
    if (!localApiSettings(config.local_api).enabled || disabled)
      return { revision: set.revision, credentials: [] };
    const credentials = [];
    for (const { username, secretHash } of set.credentials) {
      // Only generated secrets' verifiers leave the relay: nothing a person chose.
      if (GeneratedSecretVerifier.safeParse(secretHash).success) {
        credentials.push({ username, verifier: secretHash });
      } else {
        logger.warn(
          { terminalId, username },
          'a POS credential not generated is not sent to the agent',
        );
      }
    }
    return { revision: set.revision, credentials };
  }

  /** Sends the terminal's agent its set; a failure is logged (the next connect sends it again). */
  send(terminalId: string, config?: FleetConfig): void {
    this.message(terminalId, config).then(
      (message) => this.options.publish(terminalId, message),
      (error: unknown) =>
        this.options.logger.error({ err: error, terminalId }, 'POS verifiers not sent'),
    );
  }
}
