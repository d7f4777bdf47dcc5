/**
 * Events: CloudEvents 1.0 notifications of transaction and terminal-status changes, of
 * pairings and of terminals' end-of-day settlements (protocol/settlement.ts), how
 * clients read them (`/event/list`) and how they are pushed (webhooks).
 */
import { z } from 'zod';
import { TerminalId, WaitSeconds, type Revision } from './fields.js';
import { TerminalSettlement } from './settlement.js';
import { terminalStatusSchema } from './terminal-status.js';
import { transactionSchema } from './transaction.js';

export const EVENT_KINDS = [
  'Transaction',
  'TerminalStatus',
  'TerminalPaired',
  'TerminalSettlement',
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** Event type names keep `v0` on every revision; the vendor part is configurable. */
export const eventType = (vendor: string, kind: EventKind) => `eu.${vendor}.api.pos.v0.${kind}`;

export const EventId = z.string().regex(/^[0-9a-zA-Z-]{1,63}$/);
/** A group of terminals: `cohort-` and lowercase letters, digits and hyphens. */
export const CohortId = z.string().regex(/^cohort-[0-9a-z-]{1,120}$/);
export const EventSubject = z.union([TerminalId, CohortId], {
  error: 'must be a terminal id or a cohort id (cohort-…)',
});

/** A pairing code was claimed: a new terminal, its name and cohort, and who claimed it. */
export const TerminalPaired = z.object({
  terminal_id: TerminalId,
  name: z.string(),
  cohort: z.string().optional(),
  /** The username of the credential that claimed the code. */
  claimed_by: z.string(),
  paired_at: z.string(),
});
export type TerminalPaired = z.infer<typeof TerminalPaired>;

const EventTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3,6})?Z$/)
  .min(20)
  .max(27);

export function cloudEventSchema(revision: Revision) {
  const common = {
    id: EventId,
    source: z.string().min(1),
    specversion: z.literal('1.0'),
    time: EventTime.optional(),
    subject: z.string().min(1).optional(),
    datacontenttype: z.string().min(1).optional(),
    dataschema: z.string().min(1).optional(),
  };
  return z.union([
    z.object({
      ...common,
      type: z.string().regex(/\.api\.pos\.v0\.Transaction$/),
      data: transactionSchema(revision),
    }),
    z.object({
      ...common,
      type: z.string().regex(/\.api\.pos\.v0\.TerminalStatus$/),
      data: terminalStatusSchema(revision),
    }),
    z.object({
      ...common,
      type: z.string().regex(/\.api\.pos\.v0\.TerminalPaired$/),
      data: TerminalPaired,
    }),
    z.object({
      ...common,
      type: z.string().regex(/\.api\.pos\.v0\.TerminalSettlement$/),
      data: TerminalSettlement,
    }),
  ]);
}

export const EventFilter = z.object({
  subject: z.object({ eq: EventSubject }).optional(),
  type: z.object({ eq: z.string().min(1).max(255) }).optional(),
});
export type EventFilter = z.infer<typeof EventFilter>;

export const EVENT_LIST_DEFAULT_LIMIT = 100;
export const EVENT_LIST_MAX_LIMIT = 1000;

export const EventListRequest = z.object({
  filter: EventFilter.optional(),
  next_token: z.string().min(1).max(2048).optional(),
  limit: z.number().int().min(1).max(EVENT_LIST_MAX_LIMIT).optional(),
  wait_seconds: WaitSeconds.optional(),
  options: z.object({ wait_seconds: WaitSeconds.optional() }).optional(),
});
export type EventListRequest = z.infer<typeof EventListRequest>;

export const eventListResponseSchema = (revision: Revision) =>
  z.object({ events: z.array(cloudEventSchema(revision)), next_token: z.string() });

export const WEBHOOK_MODES = ['structured', 'binary'] as const;

export const WebhookCreateRequest = z.object({
  url: z.url({ protocol: /^https?$/ }).max(2048),
  filter: EventFilter.optional(),
  mode: z.enum(WEBHOOK_MODES).optional(),
});
export type WebhookCreateRequest = z.infer<typeof WebhookCreateRequest>;

export const WebhookIdRequest = z.object({ id: z.string().regex(/^wh-[0-9A-Z]{26}$/) });

export const WebhookView = z.object({
  id: z.string(),
  url: z.string(),
  filter: EventFilter,
  mode: z.enum(WEBHOOK_MODES),
  enabled: z.boolean(),
  created_at: z.string(),
  /** Why delivery stopped, when it did. */
  disabled_reason: z.string().optional(),
  /** When the current run of failed deliveries began. */
  failing_since: z.string().optional(),
  last_error: z.string().optional(),
  /** Events still waiting for this receiver. */
  backlog: z.number().int().min(0),
});
export type WebhookView = z.infer<typeof WebhookView>;

export const WebhookCreateResponse = z.object({
  webhook: WebhookView.extend({
    /** The signing secret, shown this once. */
    secret: z.string(),
  }),
});
export const WebhookListResponse = z.object({ webhooks: z.array(WebhookView) });
export const WebhookResponse = z.object({ webhook: WebhookView });

/** The header a webhook delivery is signed in: `t=<unix seconds>,v1=<hex HMAC-SHA256>`. */
export const WEBHOOK_SIGNATURE_HEADER = 'tps-signature';
/** The signed text: `${t}.${body}`. */
export const signedWebhookText = (timestamp: number, body: string) => `${timestamp}.${body}`;
