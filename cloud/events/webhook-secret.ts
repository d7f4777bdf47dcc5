import { randomBytes } from 'node:crypto';

/**
 * A webhook's signing secret: `whsec_` and 24 random bytes in base64, the form Standard
 * Webhooks libraries read (they decode what follows `whsec_` as base64).
 */
export const newWebhookSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;
