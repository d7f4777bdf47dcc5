/**
 * Where the relay's settings come from: each setting's environment variable and flag (the
 * one list the parser, `tps cloud --help` and docs/configuration.md read), and the loading
 * of a configuration from them, checked by config.ts's schema.
 */
import { UsageError } from '../common/cli.js';
import { CloudConfigSchema, type CloudConfig, type CloudConfigInput } from './config.js';

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
