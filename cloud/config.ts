/**
 * The relay's configuration: flags override `TPS_*` environment variables, which
 * override the defaults. Checked by zod at start; docs/configuration.md is the table.
 */
import { UsageError } from '../common/cli.js';
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

/** Each setting with its environment variable and flag, for parsing and for the docs. */
export const CLOUD_SETTINGS = {
  host: { env: 'TPS_HOST', flag: 'host', doc: 'Address the HTTP API listens on.' },
  port: { env: 'TPS_PORT', flag: 'port', doc: 'HTTP port; 0 picks a free one.' },
  dataDir: {
    env: 'TPS_DATA_DIR',
    flag: 'data-dir',
    doc: 'Directory of the SQLite store and of hosted simulators’ journals.',
  },
  databaseUrl: {
    env: 'TPS_DATABASE_URL',
    flag: 'database-url',
    doc: 'PostgreSQL address; the store then lives there, and several relays may share it (docs/deploy.md).',
  },
  shutdownDelayS: {
    env: 'TPS_SHUTDOWN_DELAY_S',
    flag: 'shutdown-delay-s',
    doc: 'Seconds between a stop signal (GET /ready then answers 503) and closing, for the load balancer to move away.',
  },
  accountUsername: {
    env: 'TPS_ACCOUNT_USERNAME',
    flag: 'account-username',
    doc: 'Account API username; without it one is generated and printed once at first start.',
  },
  accountPassword: {
    env: 'TPS_ACCOUNT_PASSWORD',
    flag: 'account-password',
    doc: 'Account API password (at least 12 characters); set together with the username.',
  },
  operatorUsername: {
    env: 'TPS_OPERATOR_USERNAME',
    flag: 'operator-username',
    doc: "The operator's API username (it creates and disables merchant accounts); without it one is generated and printed once when the operator's account is made.",
  },
  operatorPassword: {
    env: 'TPS_OPERATOR_PASSWORD',
    flag: 'operator-password',
    doc: "The operator's API password (at least 12 characters); set together with the username.",
  },
  simulatorDelayMs: {
    env: 'TPS_SIMULATOR_DELAY_MS',
    flag: 'simulator-delay-ms',
    doc: 'How long a simulated terminal works on an ordinary payment.',
  },
  simulatorMode: {
    env: 'TPS_SIMULATOR_MODE',
    flag: 'simulator-mode',
    doc: 'agent: simulated terminals are agents on the MQTT path; in-process: played inside the relay.',
  },
  maxUnconfirmed: {
    env: 'TPS_MAX_UNCONFIRMED',
    flag: 'max-unconfirmed',
    doc: 'Unconfirmed transactions a terminal may hold before new ones are refused.',
  },
  pauseTimeoutS: {
    env: 'TPS_PAUSE_TIMEOUT_S',
    flag: 'pause-timeout-s',
    doc: 'Seconds a paused transaction waits for continue before it is aborted.',
  },
  startTtlS: {
    env: 'TPS_START_TTL_S',
    flag: 'start-ttl-s',
    doc: 'Seconds a terminal may take to receive a payment start; later it refuses it as EXPIRED.',
  },
  gracePeriodS: {
    env: 'TPS_GRACE_PERIOD_S',
    flag: 'grace-period-s',
    doc: 'Seconds a CONFIRMED transaction can still be confirmed as failed; then it commits.',
  },
  releasePublicKey: {
    env: 'TPS_RELEASE_PUBLIC_KEY',
    flag: 'release-public-key',
    doc: 'PEM file of the ed25519 public key agent releases must be signed with; unset: no release is accepted.',
  },
  releaseDir: {
    env: 'TPS_RELEASE_DIR',
    flag: 'release-dir',
    doc: 'Folder of published release archives (default: the data dir’s releases/); shared by every relay.',
  },
  releaseMaxUploads: {
    env: 'TPS_RELEASE_MAX_UPLOADS',
    flag: 'release-max-uploads',
    doc: 'Release uploads one relay receives or checks at once (1-16), each checked on a thread of its own; beyond, 503 SERVICE_BUSY.',
  },
  releaseMaxDiskBytes: {
    env: 'TPS_RELEASE_MAX_DISK_BYTES',
    flag: 'release-max-disk-bytes',
    doc: 'Bytes the release folder may hold, uploads being received included; beyond, 413 RELEASE_STORAGE_FULL, so that uploads never fill the disk.',
  },
  tlsCert: {
    env: 'TPS_TLS_CERT',
    flag: 'tls-cert',
    doc: 'PEM certificate file; with TPS_TLS_KEY the API is served over HTTPS (TLS 1.2+).',
  },
  tlsKey: { env: 'TPS_TLS_KEY', flag: 'tls-key', doc: 'PEM private key file for TPS_TLS_CERT.' },
  publicUrl: {
    env: 'TPS_PUBLIC_URL',
    flag: 'public-url',
    doc: 'Public base address without the version segment (default: from host and port).',
  },
  logLevel: { env: 'TPS_LOG_LEVEL', flag: 'log-level', doc: 'pino log level.' },
  logFormat: {
    env: 'TPS_LOG_FORMAT',
    flag: 'log-format',
    doc: 'json, pretty, or auto: readable lines on a terminal, JSON lines otherwise.',
  },
  mqttHost: {
    env: 'TPS_MQTT_HOST',
    flag: 'mqtt-host',
    doc: 'Address the embedded MQTT broker listens on for agents (default: TPS_HOST).',
  },
  mqttPort: {
    env: 'TPS_MQTT_PORT',
    flag: 'mqtt-port',
    doc: 'Port of the embedded MQTT broker; 0 picks a free one.',
  },
  mqttUrl: {
    env: 'TPS_MQTT_URL',
    flag: 'mqtt-url',
    doc: 'An external broker (mqtt:// or mqtts://) instead of the embedded one.',
  },
  mqttUsername: {
    env: 'TPS_MQTT_USERNAME',
    flag: 'mqtt-username',
    doc: "The relay's username at the external broker.",
  },
  mqttPassword: {
    env: 'TPS_MQTT_PASSWORD',
    flag: 'mqtt-password',
    doc: "The relay's password at the external broker.",
  },
  mqttMaxPacketBytes: {
    env: 'TPS_MQTT_MAX_PACKET_BYTES',
    flag: 'mqtt-max-packet-bytes',
    doc: 'Largest MQTT packet the embedded broker reads; a larger one ends its connection at its header.',
  },
  mqttConnectTimeoutS: {
    env: 'TPS_MQTT_CONNECT_TIMEOUT_S',
    flag: 'mqtt-connect-timeout-s',
    doc: 'Seconds a new connection to the embedded broker has to send CONNECT; then it is closed.',
  },
  mqttMaxConnections: {
    env: 'TPS_MQTT_MAX_CONNECTIONS',
    flag: 'mqtt-max-connections',
    doc: 'Connections the embedded broker holds at once; more are closed at once.',
  },
  mqttMaxPayloadBytes: {
    env: 'TPS_MQTT_MAX_PAYLOAD_BYTES',
    flag: 'mqtt-max-payload-bytes',
    doc: 'Largest message an agent may publish; a larger one is dropped before the relay reads it.',
  },
  mqttMessagesPerMinute: {
    env: 'TPS_MQTT_MESSAGES_PER_MINUTE',
    flag: 'mqtt-messages-per-minute',
    doc: "Messages one terminal's agent may publish per minute (bursts as large); more are dropped.",
  },
  mqttTls: {
    env: 'TPS_MQTT_TLS',
    flag: 'mqtt-tls',
    doc: "The embedded broker's listener speaks TLS (mqtts://; TLS 1.2+); default true when it has a certificate (TPS_MQTT_TLS_CERT, else TPS_TLS_CERT).",
  },
  mqttTlsCert: {
    env: 'TPS_MQTT_TLS_CERT',
    flag: 'mqtt-tls-cert',
    doc: "PEM certificate file of the embedded broker's TLS listener (default: TPS_TLS_CERT).",
  },
  mqttTlsKey: {
    env: 'TPS_MQTT_TLS_KEY',
    flag: 'mqtt-tls-key',
    doc: 'PEM private key file for TPS_MQTT_TLS_CERT.',
  },
  mqttAllowPlaintext: {
    env: 'TPS_MQTT_ALLOW_PLAINTEXT',
    flag: 'mqtt-allow-plaintext',
    doc: 'Let the embedded broker listen in plain text on a non-loopback address (behind a proxy that terminates TLS, or a private network); without it such a start is refused.',
  },
  mqttPublicUrl: {
    env: 'TPS_MQTT_PUBLIC_URL',
    flag: 'mqtt-public-url',
    doc: 'The broker address written into agent config files (default: the broker the relay uses).',
  },
  eventVendor: {
    env: 'TPS_EVENT_VENDOR',
    flag: 'event-vendor',
    doc: 'Vendor part of event type names: eu.<vendor>.api.pos.v0.Transaction.',
  },
  eventRetentionS: {
    env: 'TPS_EVENT_RETENTION_S',
    flag: 'event-retention-s',
    doc: 'Seconds events are kept (longer while an enabled webhook still needs them).',
  },
  webhookAllowHttp: {
    env: 'TPS_WEBHOOK_ALLOW_HTTP',
    flag: 'webhook-allow-http',
    doc: 'Accept plain http:// webhook endpoints (development only).',
  },
  webhookAllowNetworks: {
    env: 'TPS_WEBHOOK_ALLOW_NETWORKS',
    flag: 'webhook-allow-networks',
    doc: 'Non-public networks webhooks may reach (CIDR ranges, comma-separated); others are refused.',
  },
  webhooksPerCredential: {
    env: 'TPS_WEBHOOKS_PER_CREDENTIAL',
    flag: 'webhooks-per-credential',
    doc: 'Webhooks one credential may create; beyond, 400 TOO_MANY_WEBHOOKS.',
  },
  webhooksPerAccount: {
    env: 'TPS_WEBHOOKS_PER_ACCOUNT',
    flag: 'webhooks-per-account',
    doc: "Webhooks one account may hold, its terminals' included; beyond, 400 TOO_MANY_WEBHOOKS.",
  },
  webhookRetryBaseMs: {
    env: 'TPS_WEBHOOK_RETRY_BASE_MS',
    flag: 'webhook-retry-base-ms',
    doc: 'First back-off after a failed webhook delivery; it doubles on each failure.',
  },
  webhookRetryCapMs: {
    env: 'TPS_WEBHOOK_RETRY_CAP_MS',
    flag: 'webhook-retry-cap-ms',
    doc: 'Longest back-off between webhook delivery attempts.',
  },
  webhookDisableAfterS: {
    env: 'TPS_WEBHOOK_DISABLE_AFTER_S',
    flag: 'webhook-disable-after-s',
    doc: 'A webhook failing for this long is disabled, with the reason shown in /webhook/list.',
  },
  signInWindowS: {
    env: 'TPS_SIGN_IN_WINDOW_S',
    flag: 'sign-in-window-s',
    doc: 'Failed sign-ins are counted in windows of this many seconds.',
  },
  signInFailuresPerUserSource: {
    env: 'TPS_SIGN_IN_FAILURES_PER_USER_SOURCE',
    flag: 'sign-in-failures-per-user-source',
    doc: 'Failed sign-ins of one username from one address per window; then 429.',
  },
  signInFailuresPerSource: {
    env: 'TPS_SIGN_IN_FAILURES_PER_SOURCE',
    flag: 'sign-in-failures-per-source',
    doc: 'Failed sign-ins from one address, any usernames, per window; then 429.',
  },
  signInFailuresPerUser: {
    env: 'TPS_SIGN_IN_FAILURES_PER_USER',
    flag: 'sign-in-failures-per-user',
    doc: 'Failed sign-ins of one username from anywhere per window; then 429, except where it signed in before.',
  },
  signInHashes: {
    env: 'TPS_SIGN_IN_HASHES',
    flag: 'sign-in-hashes',
    doc: 'Password hashes checked at once; beyond, 503 with Retry-After.',
  },
  pairingTtlS: {
    env: 'TPS_PAIRING_TTL_S',
    flag: 'pairing-ttl-s',
    doc: 'Seconds a pairing code may be claimed, and a claimed pairing collected by its agent.',
  },
  pairingWindowS: {
    env: 'TPS_PAIRING_WINDOW_S',
    flag: 'pairing-window-s',
    doc: 'Pairing attempts are counted in windows of this many seconds.',
  },
  pairingPerSource: {
    env: 'TPS_PAIRING_PER_SOURCE',
    flag: 'pairing-per-source',
    doc: 'Codes asked for, and waits with an unknown secret, from one address per window; then 429.',
  },
  pairingClaimFailuresPerCredential: {
    env: 'TPS_PAIRING_CLAIM_FAILURES_PER_CREDENTIAL',
    flag: 'pairing-claim-failures-per-credential',
    doc: 'Failed claims of pairing codes by one credential per window; then 429.',
  },
  pairingClaimFailuresPerAccount: {
    env: 'TPS_PAIRING_CLAIM_FAILURES_PER_ACCOUNT',
    flag: 'pairing-claim-failures-per-account',
    doc: 'Failed claims of pairing codes by all credentials of one account per window; then 429.',
  },
  pairingWaitsPerSource: {
    env: 'TPS_PAIRING_WAITS_PER_SOURCE',
    flag: 'pairing-waits-per-source',
    doc: 'Pairing waits parked at once from one address (a pairing parks one: a newer wait ends the older); then 429.',
  },
  trustProxy: {
    env: 'TPS_TRUST_PROXY',
    flag: 'trust-proxy',
    doc: 'Proxies trusted to name the client in X-Forwarded-For: addresses or CIDR ranges, comma-separated.',
  },
  maxParkedPerCredential: {
    env: 'TPS_MAX_PARKED_PER_CREDENTIAL',
    flag: 'max-parked-per-credential',
    doc: 'Long polls and event waits one credential may have waiting at once (at most 1000); more are refused 429 with Retry-After.',
  },
  maxParkedPerAccount: {
    env: 'TPS_MAX_PARKED_PER_ACCOUNT',
    flag: 'max-parked-per-account',
    doc: "Long polls and event waits all the credentials of one account (its terminals' included) may have waiting at once (at most 100000); more are refused 429 with Retry-After, so one merchant cannot take the relay's sockets from the others.",
  },
  diagnosticsPerAccount: {
    env: 'TPS_DIAGNOSTICS_PER_ACCOUNT',
    flag: 'diagnostics-per-account',
    doc: 'Diagnostic requests (/fleet/diagnostics) one account may have waiting for its terminals at once (at most 1000); more are refused 429 with Retry-After. All accounts together: 1000.',
  },
  httpRequestTimeoutS: {
    env: 'TPS_HTTP_REQUEST_TIMEOUT_S',
    flag: 'http-request-timeout-s',
    doc: 'Seconds a client has to send a whole request, headers and body; then 408 and the connection is closed. Waiting for the answer is not counted.',
  },
  httpHeadersTimeoutS: {
    env: 'TPS_HTTP_HEADERS_TIMEOUT_S',
    flag: 'http-headers-timeout-s',
    doc: "Seconds a client has to send a request's headers, from the connection or the previous answer; then 408 and the connection is closed.",
  },
  httpMaxConnections: {
    env: 'TPS_HTTP_MAX_CONNECTIONS',
    flag: 'http-max-connections',
    doc: 'Connections the HTTP API holds at once; more are closed at once.',
  },
  defaultSimulator: {
    env: 'TPS_DEFAULT_SIMULATOR',
    flag: 'default-simulator',
    doc: 'Create one simulated terminal on first start (true or false).',
  },
} as const satisfies Record<keyof CloudConfig, { env: string; flag: string; doc: string }>;

/** A wrong setting (a flag or its environment variable): a usage error, nothing started. */
export class ConfigError extends UsageError {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
  override readonly name = 'ConfigError';
}

/** Builds the configuration from flags and the environment; throws ConfigError naming every mistake. */
export function loadCloudConfig(
  flags: Partial<Record<string, string | boolean>>,
  env: NodeJS.ProcessEnv,
  overrides: Partial<CloudConfigInput> = {},
): CloudConfig {
  const raw: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(CLOUD_SETTINGS)) {
    const value = flags[setting.flag] ?? env[setting.env];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  const parsed = CloudConfigSchema.safeParse({ ...raw, ...overrides });
  if (parsed.success) return parsed.data;
  throw new ConfigError(
    parsed.error.issues.map((issue) => {
      const key = issue.path[0] as keyof typeof CLOUD_SETTINGS | undefined;
      const setting = key ? CLOUD_SETTINGS[key] : undefined;
      const name = setting ? `${setting.env} (--${setting.flag})` : 'configuration';
      return `${name}: ${issue.message}`;
    }),
  );
}
