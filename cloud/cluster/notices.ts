/**
 * What this relay does with the change notices of other relays sharing its store: each
 * wakes what waits here on the change (long polls, event waits, pairing waits, webhook
 * deliverers, simulators); the delivery rules listen for their own (cloud/delivery/).
 */
import type { Logger } from 'pino';
import type { ChangeNotice } from './change-bus.js';

export interface NoticeHandlers {
  /** A transaction changed: long polls parked on it here read it again. */
  transaction(notice: ChangeNotice & { kind: 'transaction' }): Promise<void>;
  /** Events were appended (which, when the notice says). */
  events(notice: ChangeNotice & { kind: 'events' }): void;
  /** Notices may have been missed: everything parked reads again. */
  resync(): Promise<void>;
  /** Webhooks were created, deleted or re-enabled. */
  webhooks(): Promise<void>;
  /** A simulated terminal was created elsewhere. */
  simulator(terminalId: string): Promise<void>;
  /** A credential was revoked or rotated elsewhere: forget it, end its agent's sessions. */
  credential(notice: ChangeNotice & { kind: 'credential' }): Promise<void>;
  /** An account was disabled or enabled elsewhere: what is kept of it is read again. */
  account(accountId: string): void;
  /** A pairing was claimed elsewhere (which, when the notice says): its wait reads again. */
  pairing(notice: ChangeNotice & { kind: 'pairing' }): void;
}

/** A bus listener that hands each notice to its handler; a handler's failure is logged. */
export function routeNotices(
  handlers: NoticeHandlers,
  logger: Logger,
): (notice: ChangeNotice) => void {
  const settle = (work: Promise<void>, what: string) =>
    work.catch((error: unknown) => logger.warn({ err: error }, what));
  return (notice) => {
    switch (notice.kind) {
      case 'transaction':
        return void settle(
          handlers.transaction(notice),
          'could not apply a change from another relay',
        );
      case 'events':
        return handlers.events(notice);
      case 'resync':
        handlers.events({ kind: 'events' });
        handlers.pairing({ kind: 'pairing' });
        return void settle(handlers.resync(), 'could not re-read parked long polls and deadlines');
      case 'webhooks':
        return void settle(handlers.webhooks(), 'could not bring webhook deliveries in line');
      case 'simulator':
        return void settle(handlers.simulator(notice.terminalId), 'simulator not started');
      case 'credential':
        return void settle(handlers.credential(notice), 'could not apply a revoked credential');
      case 'account':
        return handlers.account(notice.accountId);
      case 'pairing':
        return handlers.pairing(notice);
      default:
        // Acknowledgements and reports: the outbox and inbox listen for them.
        return;
    }
  };
}
