import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { WebhookVerifier } from '../client/webhook-signature.js';
import { newWebhookSecret } from '../cloud/events/webhook-secret.js';
import { webhookMessage, type CloudEventJson } from '../cloud/events/webhook-message.js';

const event: CloudEventJson = {
  id: 'ev-01J0000000000000000000000',
  source: '/pos/v1/terminals/t-1',
  specversion: '1.0',
  type: 'eu.vendor.api.pos.v0.Transaction',
  subject: 't-1',
  time: '2026-11-24T10:00:00.123Z',
  datacontenttype: 'application/json',
  data: { external_id: 'order-1', state: 'COMMITTED', note: 'Grüße 100%' },
};

describe('webhook messages', () => {
  const secret = newWebhookSecret();
  const timestamp = Math.floor(Date.now() / 1000);

  it('structured mode: the whole event as the body, typed as a CloudEvent', () => {
    const message = webhookMessage({ id: 'wh-1', mode: 'structured', secret }, event, timestamp);
    expect(message.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
    expect(JSON.parse(message.body)).toEqual(event);
  });

  it('binary mode: the data as the body, the attributes as ce- headers, encoded as the binding says', () => {
    const message = webhookMessage(
      { id: 'wh-1', mode: 'binary', secret },
      { ...event, subject: 'Kasse 1 "Süd" 50%' },
      timestamp,
    );
    expect(message.headers).toMatchObject({
      'content-type': 'application/json',
      'ce-id': event.id,
      'ce-specversion': '1.0',
      'ce-type': event.type,
      'ce-source': event.source,
      'ce-time': event.time,
      'ce-subject': 'Kasse%201%20%22S%C3%BCd%22%2050%25',
    });
    expect(message.headers).not.toHaveProperty('ce-data');
    expect(message.headers).not.toHaveProperty('ce-datacontenttype');
    expect(JSON.parse(message.body)).toEqual(event.data);
  });

  it('is signed so that an off-the-shelf Standard Webhooks library and the tps verifier both accept it', () => {
    for (const mode of ['structured', 'binary'] as const) {
      const message = webhookMessage({ id: 'wh-1', mode, secret }, event, timestamp);
      expect(() => new Webhook(secret).verify(message.body, message.headers)).not.toThrow();
      expect(() =>
        new WebhookVerifier(secret).verify(message.body, message.headers['tps-signature']!),
      ).not.toThrow();
      // Either signature fails for a body changed on the way.
      const changed = message.body.replace('order-1', 'order-2');
      expect(() => new Webhook(secret).verify(changed, message.headers)).toThrow();
      expect(() =>
        new WebhookVerifier(secret).verify(changed, message.headers['tps-signature']!),
      ).toThrow();
    }
  });
});
