/**
 * Local mode's settings in the fleet configuration (`local_api`; docs/local-mode.md,
 * docs/fleet.md): whether the agent serves the POS API on the shop's network, where, and
 * the bounds on what it takes while the relay is out of reach. Every field is optional in a
 * layer; `localApiSettings` fills in the defaults. Off unless a layer turns it on.
 */
import { z } from 'zod';

/** Amounts in minor units of the currency (cents), as in the API. */
const MinorUnits = z.int().min(1).max(1_000_000_000);

export const LocalApiBounds = z.strictObject({
  /** The largest single payment taken while unreachable. */
  max_amount: MinorUnits.optional(),
  /** Payments not yet forwarded to the relay, at most. */
  max_pending_count: z.int().min(1).max(10_000).optional(),
  /** Their amounts together, at most. */
  max_pending_total: MinorUnits.optional(),
  /** The oldest one not forwarded, at most this old, in seconds (up to 7 days). */
  max_pending_age_seconds: z
    .int()
    .min(60)
    .max(7 * 86_400)
    .optional(),
});

export const LocalApiListen = z.strictObject({
  /** An IPv4 or IPv6 address of the agent's host; 0.0.0.0: every IPv4 interface. */
  host: z
    .string()
    .refine((host) => z.ipv4().safeParse(host).success || z.ipv6().safeParse(host).success, {
      message: 'must be an IPv4 or IPv6 address, e.g. "0.0.0.0"',
    })
    .optional(),
  /** 1024-65535: the agent does not run as root, and a low port needs it. */
  port: z.int().min(1024, 'must be 1024-65535').max(65_535, 'must be 1024-65535').optional(),
});

/** One layer's `local_api`. */
export const LocalApiConfig = z
  .strictObject({
    enabled: z.boolean().optional(),
    listen: LocalApiListen.optional(),
    /** Plain HTTP instead of TLS: for a bench only, never a shop. */
    plain_http: z.boolean().optional(),
    while_unreachable: LocalApiBounds.optional(),
  })
  .refine((c) => c.plain_http !== true || c.enabled === true, {
    message: 'plain_http needs enabled: true in the same layer (it is for benches only)',
    path: ['plain_http'],
  });
export type LocalApiConfig = z.infer<typeof LocalApiConfig>;

export const LOCAL_API_DEFAULTS = {
  enabled: false,
  listen: { host: '0.0.0.0', port: 8443 },
  plain_http: false,
  while_unreachable: {
    max_amount: 50_000,
    max_pending_count: 100,
    max_pending_total: 500_000,
    max_pending_age_seconds: 86_400,
  },
} as const;

/** The settings in force: every field set. */
export interface LocalApiSettings {
  enabled: boolean;
  listen: { host: string; port: number };
  plain_http: boolean;
  while_unreachable: {
    max_amount: number;
    max_pending_count: number;
    max_pending_total: number;
    max_pending_age_seconds: number;
  };
}

/** A layer's fields over another's, nested objects merged field by field. */
export function mergeLocalApi(
  wider: LocalApiConfig | undefined,
  narrower: LocalApiConfig,
): LocalApiConfig {
  const { listen, while_unreachable: bounds, ...rest } = narrower;
  const merged: LocalApiConfig = { ...wider, ...rest };
  if (listen) merged.listen = { ...wider?.listen, ...listen };
  if (bounds) merged.while_unreachable = { ...wider?.while_unreachable, ...bounds };
  return merged;
}

/** The effective `local_api` with the defaults for what no layer set. */
export function localApiSettings(config: LocalApiConfig | undefined): LocalApiSettings {
  const d = LOCAL_API_DEFAULTS;
  return {
    enabled: config?.enabled ?? d.enabled,
    listen: { ...d.listen, ...config?.listen },
    plain_http: config?.plain_http ?? d.plain_http,
    while_unreachable: { ...d.while_unreachable, ...config?.while_unreachable },
  };
}
