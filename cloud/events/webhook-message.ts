/**
 * What one webhook delivery sends: the event in the CloudEvents HTTP binding (structured or
 * binary content mode, CloudEvents 1.0), signed twice over the same body — `tps-signature`
 * (docs/events.md; `client/webhook-signature.ts` verifies it) and the Standard Webhooks
 * headers (`webhook-id`, `webhook-timestamp`, `webhook-signature`), which off-the-shelf
 * libraries verify. The binding is a few lines of header mapping, written here rather than
 * pulling in the CloudEvents SDK and its 37 packages.
 */
import { createHmac } from 'node:crypto';
import { WEBHOOK_SIGNATURE_HEADER } from '../../protocol/index.js';
import type { WebhookRecord } from '../store/records.js';
import { webhookSignature } from './webhook-signature.js';

/** A CloudEvent as the API renders it: its attributes and its `data`. */
export type CloudEventJson = { id: string; data?: unknown } & Record<string, unknown>;

export interface WebhookMessage {
  headers: Record<string, string>;
  body: string;
}

const STRUCTURED_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

export function webhookMessage(
  hook: Pick<WebhookRecord, 'id' | 'mode' | 'secret'>,
  event: CloudEventJson,
  timestamp: number,
): WebhookMessage {
  const { headers, body } = hook.mode === 'binary' ? binaryMode(event) : structuredMode(event);
  return {
    body,
    headers: {
      ...headers,
      [WEBHOOK_SIGNATURE_HEADER]: webhookSignature(hook.secret, timestamp, body),
      'tps-webhook-id': hook.id,
      // Standard Webhooks: the id stays the same when a delivery is retried.
      'webhook-id': event.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': standardWebhookSignature(hook.secret, event.id, timestamp, body),
    },
  };
}

/** The whole event as the body (CloudEvents HTTP binding §3.2). */
function structuredMode(event: CloudEventJson): WebhookMessage {
  return { headers: { 'content-type': STRUCTURED_CONTENT_TYPE }, body: JSON.stringify(event) };
}

/** The data as the body, every other attribute a `ce-` header (§3.1). */
function binaryMode(event: CloudEventJson): WebhookMessage {
  const { data, datacontenttype, ...attributes } = event;
  const headers: Record<string, string> = {
    'content-type': typeof datacontenttype === 'string' ? datacontenttype : JSON_CONTENT_TYPE,
  };
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined && value !== null) headers[`ce-${name}`] = headerValue(String(value));
  }
  return { headers, body: data === undefined ? '' : JSON.stringify(data) };
}

/**
 * A header value as §3.1.3.2 asks: printable ASCII except space, `"` and `%` as they are,
 * everything else percent-encoded as UTF-8.
 */
function headerValue(value: string): string {
  return value.replace(/[^\x21\x23-\x24\x26-\x7e]/gu, (character) =>
    [...Buffer.from(character)]
      .map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, '0')}`)
      .join(''),
  );
}

/**
 * `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed with the bytes the secret
 * encodes after `whsec_` (base64; secrets made before base64url are read as such).
 */
function standardWebhookSignature(
  secret: string,
  id: string,
  timestamp: number,
  body: string,
): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}
