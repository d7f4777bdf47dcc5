/**
 * For webhook receivers: checks that a delivery comes from the service (HMAC-SHA256 of
 * "<t>.<body>" with the webhook's secret), is recent (within `toleranceSeconds`), and has
 * not been seen before (a replayed copy of a delivery). Branch on `error.code`.
 *
 *   const verifier = new WebhookVerifier(process.env.WEBHOOK_SECRET);
 *   verifier.verify(rawBody, request.headers['tps-signature']); // throws WebhookSignatureError
 *
 * A retried delivery of the same event is signed anew and passes; de-duplicate events by
 * their CloudEvents `id`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { signedWebhookText } from '../protocol/index.js';

export { WEBHOOK_SIGNATURE_HEADER } from '../protocol/index.js';

export type WebhookSignatureErrorCode =
  'MALFORMED_SIGNATURE' | 'SIGNATURE_MISMATCH' | 'TIMESTAMP_OUTSIDE_TOLERANCE' | 'REPLAYED';

export class WebhookSignatureError extends Error {
  constructor(
    readonly code: WebhookSignatureErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookSignatureError';
  }
}

const mac = (secret: string, timestamp: number, payload: string) =>
  createHmac('sha256', secret).update(signedWebhookText(timestamp, payload)).digest();

/** Signs a payload as the service does: for tests of a receiver. */
export function signWebhookPayload(
  payload: string,
  secret: string,
  timestamp = Math.floor(Date.now() / 1000),
): string {
  return `t=${timestamp},v1=${mac(secret, timestamp, payload).toString('hex')}`;
}

export interface WebhookVerifierOptions {
  /** How old (or how far in the future) a signature may be. Default 300 s. */
  toleranceSeconds?: number;
  now?: () => number;
}

export class WebhookVerifier {
  private readonly seen = new Map<string, number>();
  private readonly toleranceSeconds: number;
  private readonly now: () => number;

  constructor(
    private readonly secret: string,
    options: WebhookVerifierOptions = {},
  ) {
    this.toleranceSeconds = options.toleranceSeconds ?? 300;
    this.now = options.now ?? Date.now;
  }

  verify(payload: string | Buffer, header: string | string[] | undefined): void {
    const text = typeof payload === 'string' ? payload : payload.toString('utf8');
    const value = Array.isArray(header) ? header[0] : header;
    const parts = new Map(
      (value ?? '').split(',').map((part) => {
        const [key, ...rest] = part.trim().split('=');
        return [key, rest.join('=')] as const;
      }),
    );
    const timestamp = Number(parts.get('t'));
    const signature = parts.get('v1');
    if (!Number.isInteger(timestamp) || !signature || !/^[0-9a-f]{64}$/.test(signature)) {
      throw new WebhookSignatureError('MALFORMED_SIGNATURE', 'no valid t= and v1= in the header');
    }
    const expected = mac(this.secret, timestamp, text);
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) {
      throw new WebhookSignatureError('SIGNATURE_MISMATCH', 'the signature does not match');
    }
    const nowMs = this.now();
    if (Math.abs(nowMs / 1000 - timestamp) > this.toleranceSeconds) {
      throw new WebhookSignatureError(
        'TIMESTAMP_OUTSIDE_TOLERANCE',
        `signed at ${timestamp}, more than ${this.toleranceSeconds} s from now`,
      );
    }
    for (const [key, expires] of this.seen) if (expires < nowMs) this.seen.delete(key);
    if (this.seen.has(signature)) {
      throw new WebhookSignatureError('REPLAYED', 'this delivery was already received');
    }
    this.seen.set(signature, (timestamp + this.toleranceSeconds) * 1000);
  }
}
