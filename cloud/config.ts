/**
 * The relay's configuration: flags override `TPS_*` environment variables, which
 * override the defaults (config-settings.ts names them). Checked by zod at start;
 * docs/configuration.md is the table.
 */
import { LogFormat } from '../common/logging.js';
import { z } from 'zod';
import { parseNetworks } from './events/webhook-target.js';

const port = z.coerce.number().int().min(0).max(65_535);
const seconds = z.coerce.number().min(0);
const optionalPath = z.string().min(1).optional();

export const CloudConfigSchema = z
  .object({
    host: z.string().min(1).default('127.0.0.1'),
    port: port.default(8080),
    dataDir: z.string().min(1).default('./data'),
    accountUsername: z
      .string()
      .regex(/^[\x21-\x7e]{3,64}$/, 'must be 3-64 printable characters without spaces or colons')
      .refine((v) => !v.includes(':'), 'must not contain a colon')
      .optional(),
    accountPassword: z.string().min(12, 'must be at least 12 characters').optional(),
    operatorUsername: z
      .string()
      .regex(/^[\x21-\x7e]{3,64}$/, 'must be 3-64 printable characters without spaces or colons')
      .refine((v) => !v.includes(':'), 'must not contain a colon')
      .optional(),
    operatorPassword: z.string().min(12, 'must be at least 12 characters').optional(),
    simulatorDelayMs: z.coerce.number().int().min(0).max(600_000).default(2000),
    simulatorMode: z.enum(['agent', 'in-process']).default('agent'),
    maxUnconfirmed: z.coerce.number().int().min(1).max(10_000).default(10),
    pauseTimeoutS: seconds.max(86_400).default(60),
    startTtlS: seconds.min(1).max(86_400).default(60),
    gracePeriodS: seconds.max(7 * 86_400).default(3600),
    tlsCert: optionalPath,
    /** PEM of the ed25519 key agent releases must be signed with (docs/fleet.md). */
    releasePublicKey: optionalPath,
    /** Where published release archives are kept (default: <data dir>/releases). */
    releaseDir: optionalPath,
    /** Release uploads received or checked at once by one relay (docs/security.md). */
    releaseMaxUploads: z.coerce.number().int().min(1).max(16).default(2),
    /** What the release folder may hold, uploads in progress included. */
    releaseMaxDiskBytes: z.coerce
      .number()
      .int()
      .min(1024 * 1024)
      .default(4 * 1024 ** 3),
    tlsKey: optionalPath,
    /** The API base address without the version segment, for links and events. */
    publicUrl: z.url().optional(),
    logLevel: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info'),
    logFormat: LogFormat.default('auto'),
    mqttHost: z.string().min(1).optional(),
    mqttPort: port.default(1884),
    mqttUrl: z
      .string()
      .regex(/^mqtts?:\/\/[^\s]+$/, 'must be an mqtt:// or mqtts:// address')
      .optional(),
    mqttUsername: z.string().min(1).optional(),
    mqttPassword: z.string().min(1).optional(),
    /** The embedded broker's listener (docs/security.md). */
    mqttMaxPacketBytes: z.coerce.number().int().min(1024).max(268_435_460).default(65_536),
    mqttConnectTimeoutS: seconds.min(1).max(600).default(10),
    mqttMaxConnections: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
    mqttMaxPayloadBytes: z.coerce.number().int().min(256).max(268_435_455).default(16_384),
    mqttMessagesPerMinute: z.coerce.number().int().min(1).max(1_000_000).default(600),
    /** The embedded broker's listener speaks TLS (default: when it has a certificate). */
    mqttTls: z
      .enum(['true', 'false'])
      .transform((v) => v === 'true')
      .or(z.boolean())
      .optional(),
    mqttTlsCert: optionalPath,
    mqttTlsKey: optionalPath,
    mqttAllowPlaintext: z
      .enum(['true', 'false'])
      .transform((v) => v === 'true')
      .or(z.boolean())
      .default(false),
    mqttPublicUrl: z
      .string()
      .regex(/^mqtts?:\/\/[^\s]+$/, 'must be an mqtt:// or mqtts:// address')
      .optional(),
    eventVendor: z
      .string()
      .regex(/^[a-z0-9-]{1,40}$/, 'must be 1-40 lowercase letters, digits or hyphens')
      .default('vendor'),
    eventRetentionS: seconds.min(60).default(7 * 86_400),
    webhookAllowHttp: z
      .enum(['true', 'false'])
      .transform((v) => v === 'true')
      .or(z.boolean())
      .default(false),
    /** Networks webhooks may reach besides public addresses (webhook-target.ts). */
    webhookAllowNetworks: z
      .string()
      .transform((list, ctx) => {
        try {
          return parseNetworks(list);
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message });
          return z.NEVER;
        }
      })
      .default([]),
    webhooksPerCredential: z.coerce.number().int().min(1).max(10_000).default(20),
    webhooksPerAccount: z.coerce.number().int().min(1).max(100_000).default(200),
    webhookRetryBaseMs: z.coerce.number().int().min(1).max(600_000).default(1000),
    webhookRetryCapMs: z.coerce.number().int().min(1).max(86_400_000).default(600_000),
    webhookDisableAfterS: seconds.max(30 * 86_400).default(3 * 86_400),
    databaseUrl: z
      .string()
      .regex(/^postgres(ql)?:\/\/[^\s]+$/, 'must be a postgres:// or postgresql:// address')
      .optional(),
    shutdownDelayS: seconds.max(600).default(0),
    /** Failed sign-ins are counted in windows this long (docs/security.md). */
    signInWindowS: seconds.min(1).max(86_400).default(900),
    signInFailuresPerUserSource: z.coerce.number().int().min(1).max(100_000).default(10),
    signInFailuresPerSource: z.coerce.number().int().min(1).max(100_000).default(30),
    signInFailuresPerUser: z.coerce.number().int().min(1).max(1_000_000).default(100),
    /** Slow password hashes checked at once; beyond, 503 SERVICE_BUSY at once. */
    signInHashes: z.coerce.number().int().min(1).max(64).default(2),
    /** How long a pairing code may be claimed (docs/fleet.md, docs/security.md). */
    pairingTtlS: seconds.min(10).max(86_400).default(600),
    /** The pairing limits count in windows this long. */
    pairingWindowS: seconds.min(1).max(86_400).default(600),
    pairingPerSource: z.coerce.number().int().min(1).max(100_000).default(10),
    pairingClaimFailuresPerCredential: z.coerce.number().int().min(1).max(100_000).default(10),
    pairingClaimFailuresPerAccount: z.coerce.number().int().min(1).max(100_000).default(20),
    pairingWaitsPerSource: z.coerce.number().int().min(1).max(10_000).default(10),
    /**
     * Proxies whose X-Forwarded-For names the client: addresses and CIDR ranges separated
     * by commas (also `loopback`, `linklocal`, `uniquelocal`). Without it the source of
     * a request is its peer.
     */
    trustProxy: z
      .string()
      .regex(
        /^\s*(loopback|linklocal|uniquelocal|[0-9a-fA-F.:/]+)(\s*,\s*(loopback|linklocal|uniquelocal|[0-9a-fA-F.:/]+))*\s*$/,
        'must be addresses or CIDR ranges separated by commas',
      )
      .optional(),
    /** Long polls and event waits one credential may have parked at once (docs/security.md). */
    maxParkedPerCredential: z.coerce.number().int().min(1).max(1_000).default(500),
    maxParkedPerAccount: z.coerce.number().int().min(1).max(100_000).default(2_000),
    /** At most the relay's ceiling (cloud/fleet/diagnostics.ts, WAITING_CEILING). */
    diagnosticsPerAccount: z.coerce.number().int().min(1).max(1_000).default(20),
    httpRequestTimeoutS: seconds.min(1).max(600).default(30),
    httpHeadersTimeoutS: seconds.min(1).max(600).default(10),
    httpMaxConnections: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
    /** Create one simulated terminal on first start. */
    defaultSimulator: z
      .enum(['true', 'false'])
      .transform((v) => v === 'true')
      .or(z.boolean())
      .default(true),
  })
  .refine((c) => c.mqttMaxPayloadBytes < c.mqttMaxPacketBytes, {
    message: 'TPS_MQTT_MAX_PAYLOAD_BYTES must be below TPS_MQTT_MAX_PACKET_BYTES',
    path: ['mqttMaxPayloadBytes'],
  })
  .refine((c) => c.httpHeadersTimeoutS <= c.httpRequestTimeoutS, {
    message: 'TPS_HTTP_HEADERS_TIMEOUT_S must not exceed TPS_HTTP_REQUEST_TIMEOUT_S',
    path: ['httpHeadersTimeoutS'],
  })
  .refine((c) => (c.tlsCert === undefined) === (c.tlsKey === undefined), {
    message: 'TPS_TLS_CERT and TPS_TLS_KEY must be set together',
    path: ['tlsCert'],
  })
  .refine((c) => (c.accountUsername === undefined) === (c.accountPassword === undefined), {
    message: 'TPS_ACCOUNT_USERNAME and TPS_ACCOUNT_PASSWORD must be set together',
    path: ['accountUsername'],
  })
  .refine((c) => (c.operatorUsername === undefined) === (c.operatorPassword === undefined), {
    message: 'TPS_OPERATOR_USERNAME and TPS_OPERATOR_PASSWORD must be set together',
    path: ['operatorUsername'],
  })
  .refine((c) => (c.mqttTlsCert === undefined) === (c.mqttTlsKey === undefined), {
    message: 'TPS_MQTT_TLS_CERT and TPS_MQTT_TLS_KEY must be set together',
    path: ['mqttTlsCert'],
  })
  .refine((c) => c.mqttTls !== true || brokerCertificate(c) !== undefined, {
    message:
      'needs a certificate: TPS_MQTT_TLS_CERT and TPS_MQTT_TLS_KEY, or the API’s TPS_TLS_CERT and TPS_TLS_KEY',
    path: ['mqttTls'],
  })
  .refine((c) => !plaintextBrokerExposed(c), {
    error: (issue) => {
      const c = issue.input as { mqttHost?: string; host: string };
      return (
        `the embedded MQTT broker would listen in plain text on ${c.mqttHost ?? c.host}, which ` +
        'is not loopback, so agent secrets, card tokens and receipts would cross the network ' +
        'in clear. Give it a certificate (TPS_TLS_CERT and TPS_TLS_KEY, or TPS_MQTT_TLS_CERT ' +
        'and TPS_MQTT_TLS_KEY), listen on loopback (TPS_MQTT_HOST=127.0.0.1), or, behind a ' +
        'proxy that terminates TLS or on a private network, set TPS_MQTT_ALLOW_PLAINTEXT=true'
      );
    },
    path: ['mqttAllowPlaintext'],
  });
export type CloudConfig = z.infer<typeof CloudConfigSchema>;

interface BrokerTlsSettings {
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
  mqttTls?: boolean | undefined;
  mqttTlsCert?: string | undefined;
  mqttTlsKey?: string | undefined;
}

/**
 * The certificate of the embedded broker's listener when it speaks TLS: its own files,
 * else the API's; none when TPS_MQTT_TLS=false.
 */
export function brokerCertificate(
  c: BrokerTlsSettings,
): { certFile: string; keyFile: string } | undefined {
  if (c.mqttTls === false) return undefined;
  if (c.mqttTlsCert && c.mqttTlsKey) return { certFile: c.mqttTlsCert, keyFile: c.mqttTlsKey };
  if (c.tlsCert && c.tlsKey) return { certFile: c.tlsCert, keyFile: c.tlsKey };
  return undefined;
}

/** Loopback addresses and names: what listens there is reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return (
    bare === 'localhost' ||
    bare === '::1' ||
    /^127(\.\d{1,3}){3}$/.test(bare) ||
    /^::ffff:127(\.\d{1,3}){3}$/.test(bare)
  );
}

/** An embedded broker's plain-text listener on an address others reach, not allowed. */
function plaintextBrokerExposed(
  c: BrokerTlsSettings & {
    mqttUrl?: string | undefined;
    mqttHost?: string | undefined;
    host: string;
    mqttAllowPlaintext: boolean;
  },
): boolean {
  if (c.mqttUrl !== undefined || c.mqttAllowPlaintext) return false;
  if (brokerCertificate(c) !== undefined) return false;
  return !isLoopbackHost(c.mqttHost ?? c.host);
}
export type CloudConfigInput = z.input<typeof CloudConfigSchema>;
