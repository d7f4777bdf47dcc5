/** GET /ready's checks: serving, the store answering, the broker connected. */
import type { Logger } from 'pino';
import { ACCOUNT_SETTING } from '../accounts/bootstrap.js';
import type { Store } from '../store/store.js';
import type { Readiness } from './ops-routes.js';

export function relayReadiness(parts: {
  store: Pick<Store, 'getSetting'>;
  draining: () => boolean;
  brokerConnected: () => boolean;
  logger: Logger;
}): Readiness {
  return {
    async check() {
      // The answer names the category; the error (host, user names) goes to the log.
      const storeCheck = await parts.store.getSetting(ACCOUNT_SETTING).then(
        () => true as const,
        (error: unknown) => {
          parts.logger.warn({ err: error }, 'readiness: store unreachable');
          return 'store unreachable';
        },
      );
      return {
        serving: parts.draining() ? 'shutting down' : true,
        store: storeCheck,
        broker: parts.brokerConnected() ? true : 'not connected to the MQTT broker',
      };
    },
  };
}
