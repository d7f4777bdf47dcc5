/**
 * What a relay does when an account is disabled or enabled (docs/tenants.md): on every
 * relay (its own change, or another's through the change bus) what is kept of the account
 * is read again and its webhook receivers stop or go on; on the relay that committed it,
 * its terminals' agents in local mode are sent their new set of verifiers (the broker is
 * shared, as for a credential's change).
 */
import type { Logger } from 'pino';

export interface AccountChangeDeps {
  /** Forgets what sign-ins kept of the account (AccountStandings). */
  forget(accountId: string): void;
  /** Brings webhook deliveries in line with the accounts' state (Webhooks.reconcile). */
  reconcileWebhooks(): Promise<void>;
  /** The ids of the account's terminals. */
  terminalsOf(accountId: string): Promise<string[]>;
  /** Sends a terminal's agent its POS verifiers (LocalCredentialDelivery.send). */
  sendVerifiers(terminalId: string): void;
  logger: Logger;
}

export function accountChanges(deps: AccountChangeDeps) {
  const { logger } = deps;
  /** Another relay's change, heard through the change bus; also the first step of one here. */
  const heard = (accountId: string) => {
    deps.forget(accountId);
    deps
      .reconcileWebhooks()
      .catch((error: unknown) =>
        logger.warn({ err: error, accountId }, 'could not bring webhook deliveries in line'),
      );
  };
  /** This relay's own change, committed. */
  const committed = (accountId: string) => {
    heard(accountId);
    deps
      .terminalsOf(accountId)
      .then((terminals) => {
        for (const terminalId of terminals) deps.sendVerifiers(terminalId);
      })
      .catch((error: unknown) => logger.error({ err: error, accountId }, 'POS verifiers not sent'));
  };
  return { heard, committed };
}
