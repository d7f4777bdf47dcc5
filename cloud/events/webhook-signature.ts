/**
 * Signs webhook deliveries: `tps-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<body>">`. The receiving side checks it with client/webhook-signature.ts.
 */
import { createHmac } from 'node:crypto';
import { signedWebhookText } from '../../protocol/index.js';

export function webhookSignature(secret: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secret).update(signedWebhookText(timestamp, body)).digest('hex');
  return `t=${timestamp},v1=${mac}`;
}
