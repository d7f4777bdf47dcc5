/**
 * The agent's configuration file (JSON), checked by zod. `tps terminal create --out FILE`
 * writes one; docs/agent.md documents every field with an example. Relative paths are
 * taken from the directory of the file, so a provisioning folder can be moved whole.
 */
import { accessSync, constants, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { TerminalId } from '../protocol/fields.js';
import { ReaderProtocol } from '../protocol/reader-capabilities.js';
import { ZvtCharset } from '../firmware-bridge/zvt/charsets.js';
import { ZvtProfileName } from '../firmware-bridge/zvt/reader/profiles.js';
import { DEFAULT_UPDATE_ROOT } from './update-release.js';

const FilePath = z.string().min(1, 'must be a file path');

export const BrokerConfig = z
  .strictObject({
    /** mqtts://host:8883 (TLS) or mqtt://host:1883. */
    url: z.string().refine(isBrokerUrl, {
      message:
        'must be an mqtt:// or mqtts:// URL with a host, e.g. mqtts://relay.example.com:8883',
    }),
    username: z.string().min(1).max(255).optional(),
    password: z.string().min(1).max(1024).optional(),
    /** PEM client certificate and its key, instead of (or with) a password. */
    cert: FilePath.optional(),
    key: FilePath.optional(),
    /** PEM CA bundle the broker's certificate must chain to (default: the system's). */
    ca: FilePath.optional(),
    /** Seconds between MQTT pings; a dead link is noticed within 1.5 times this. */
    keepalive_s: z.int().min(5).max(3600).default(30),
  })
  .superRefine((broker, ctx) => {
    const problem = (field: string, message: string) =>
      ctx.addIssue({ code: 'custom', message, path: [field] });
    if ((broker.cert === undefined) !== (broker.key === undefined)) {
      problem(broker.cert ? 'key' : 'cert', 'broker.cert and broker.key must be given together');
    }
    if (broker.password !== undefined && broker.username === undefined) {
      problem('username', 'is required with broker.password');
    }
    if (broker.password === undefined && broker.cert === undefined) {
      problem(
        'password',
        'give broker.username and broker.password, or broker.cert and broker.key',
      );
    }
    const tls = broker.url.startsWith('mqtts:');
    for (const field of ['cert', 'key', 'ca'] as const) {
      if (broker[field] !== undefined && !tls) {
        problem(field, 'needs an mqtts:// broker.url (TLS)');
      }
    }
  });

/** The speed a reader's line runs at when `reader.baud_rate` is not given. */
export const DEFAULT_BAUD_RATE = { native: 115_200, zvt: 9600 } as const;

/** `HOST:PORT` of a ZVT terminal on the network (ZVT terminals listen on 20007 by default). */
const HostPort = z.string().refine((value) => parseHostPort(value) !== undefined, {
  message: 'must be HOST:PORT with a port 1-65535, e.g. 192.168.1.50:20007',
});

/**
 * The card reader: which protocol it speaks and where it is. `native` is this project's
 * reader (docs/serial-protocol.md) on a serial device; `zvt` a payment terminal driven
 * over ZVT (docs/zvt.md), on a serial device or over TCP. `emulated` runs the emulated
 * reader of that protocol in process instead of hardware.
 */
export const ReaderConfig = z
  .strictObject({
    protocol: ReaderProtocol.default('native'),
    /** Serial device of the card reader or terminal, e.g. /dev/ttyACM0. */
    port: z.string().min(1).optional(),
    /** Default 115200 for the native reader, 9600 for ZVT (8 data bits, no parity, 2 stop bits). */
    baud_rate: z.int().min(1200).max(4_000_000).optional(),
    /** ZVT only: the terminal on the network, HOST:PORT. */
    tcp: HostPort.optional(),
    /** ZVT only: the terminal's 6-digit password (registration, reversal, end-of-day). */
    password: z
      .string()
      .regex(/^\d{6}$/, 'must be the terminal\'s password, 6 digits, e.g. "000000"')
      .optional(),
    /** ZVT only: the vendor profile (docs/zvt.md, "Profiles"). */
    profile: ZvtProfileName.optional(),
    /**
     * ZVT only: the character set of text the terminal sends without announcing one
     * (docs/zvt.md, "Character sets"); default the profile's. An announcement (TLV 14) wins.
     */
    charset: ZvtCharset.optional(),
    /** The emulated reader instead of hardware: bench, demo and tests. */
    emulated: z
      .strictObject({
        /** Where the emulated reader keeps its record of transactions (survives restarts). */
        state_file: FilePath,
        /** How long an ordinary emulated payment takes. */
        delay_ms: z.int().min(0).max(600_000).default(2000),
      })
      .optional(),
  })
  .superRefine((reader, ctx) => {
    const problem = (field: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: [field], message });
    const where = (['port', 'tcp', 'emulated'] as const).filter((f) => reader[f] !== undefined);
    if (reader.protocol === 'native') {
      if (reader.tcp !== undefined) {
        problem('tcp', 'is for reader.protocol "zvt"; the native reader is on a serial device');
      } else if (where.length !== 1) {
        problem('port', 'give exactly one of reader.port (a serial device) or reader.emulated');
      }
      for (const field of ['password', 'profile', 'charset'] as const) {
        if (reader[field] !== undefined) problem(field, 'is for reader.protocol "zvt" only');
      }
      return;
    }
    if (where.length !== 1) {
      problem(
        'port',
        'give exactly one of reader.port (a serial device), reader.tcp (HOST:PORT) or reader.emulated',
      );
    }
    if (reader.tcp !== undefined && reader.baud_rate !== undefined) {
      problem('baud_rate', 'has no meaning with reader.tcp (a network connection)');
    }
  })
  .transform((reader) => ({
    ...reader,
    baud_rate: reader.baud_rate ?? DEFAULT_BAUD_RATE[reader.protocol],
  }));

/** Dots per line of the print head: 384 for 58 mm paper, 576 for 80 mm. */
const HeadWidth = z
  .int()
  .min(8)
  .max(2048)
  .refine((w) => w % 8 === 0, 'must be a multiple of 8 dots')
  .default(384);

export const PrinterConfig = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('none') }),
  z.strictObject({
    type: z.literal('serial'),
    path: z.string().min(1),
    /** The printer's own setting; most ship at 9600. */
    baud_rate: z.int().min(1200).max(4_000_000).default(9600),
    head_width: HeadWidth,
  }),
  z.strictObject({
    type: z.literal('tcp'),
    host: z.string().min(1),
    port: z.int().min(1).max(65_535).default(9100),
    head_width: HeadWidth,
  }),
]);

/** The journal's folder on a packaged terminal (the unit's StateDirectory). */
export const DEFAULT_DATA_DIR = '/var/lib/tps-agent';

/** `HH:MM`, 00:00 to 23:59. */
const TimeOfDay = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM, e.g. 02:30');

/**
 * Updates of the agent itself (docs/fleet.md, "The updater"). Without this section the
 * agent refuses update orders: it does not know where its releases live nor whom to trust.
 */
export const UpdateConfig = z.strictObject({
  /** Holds `releases/<version>/`, the `current` symlink and the update's state file. */
  root: FilePath.default(DEFAULT_UPDATE_ROOT),
  /** PEM file of the ed25519 key every release's manifest must be signed with. */
  public_key: FilePath,
  /** The relay's API base address the archives come from, e.g. https://relay.example.com/pos */
  relay: z.string().refine(isReleaseSource, {
    message: 'must be an https:// URL (http:// only to this machine)',
  }),
  /**
   * When an update may switch and restart, in UTC; `end` before `start` spans midnight.
   * Absent: any time (a payment in progress always waits).
   */
  maintenance_window: z.strictObject({ start: TimeOfDay, end: TimeOfDay }).optional(),
  /** How long a freshly started release has to prove itself healthy before it is rolled back. */
  health_deadline_s: z.int().min(5).max(3600).default(90),
});
export type UpdateConfig = z.infer<typeof UpdateConfig>;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const AgentConfigSchema = z.strictObject({
  terminal_id: TerminalId,
  broker: BrokerConfig,
  reader: ReaderConfig,
  printer: PrinterConfig.default({ type: 'none' }),
  /** Seconds between status heartbeats (a change is reported at once). */
  heartbeat_s: z.number().min(1).max(3600).default(30),
  /** Where the journal lives (agent.sqlite): it must survive reboots and updates. */
  data_dir: FilePath.default(DEFAULT_DATA_DIR),
  log_level: z.enum(LOG_LEVELS).default('info'),
  update: UpdateConfig.optional(),
});

export type AgentConfig = z.infer<typeof AgentConfigSchema>;
export type AgentConfigInput = z.input<typeof AgentConfigSchema>;
export type BrokerConfig = z.infer<typeof BrokerConfig>;
export type ReaderConfig = z.infer<typeof ReaderConfig>;
export type PrinterConfig = z.infer<typeof PrinterConfig>;

export class AgentConfigError extends Error {
  override readonly name = 'AgentConfigError';
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`invalid agent config ${file}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** Reads and checks a config file; throws AgentConfigError naming every problem found. */
export function loadAgentConfig(file: string): AgentConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new AgentConfigError(file, [`cannot read the file: ${(error as Error).message}`]);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new AgentConfigError(file, [`not valid JSON: ${(error as Error).message}`]);
  }
  const result = parseAgentConfig(raw, path.dirname(path.resolve(file)));
  if (!result.ok) throw new AgentConfigError(file, result.problems);
  return result.config;
}

export type ParsedConfig = { ok: true; config: AgentConfig } | { ok: false; problems: string[] };

/** Checks a parsed JSON value; paths are resolved against `baseDir`, files must be readable. */
export function parseAgentConfig(raw: unknown, baseDir: string): ParsedConfig {
  const parsed = AgentConfigSchema.safeParse(raw, {
    error: (issue) =>
      issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : undefined,
  });
  if (!parsed.success) {
    return {
      ok: false,
      problems: parsed.error.issues.map((issue) => {
        const where = issue.path.map(String).join('.');
        return where ? `${where}: ${issue.message}` : issue.message;
      }),
    };
  }
  const config = resolvePaths(parsed.data, baseDir);
  const problems = unreadableFiles(config);
  return problems.length ? { ok: false, problems } : { ok: true, config };
}

/** Every relative path is taken from the config file's directory. */
function resolvePaths(config: AgentConfig, baseDir: string): AgentConfig {
  const at = (p: string | undefined) => (p === undefined ? undefined : path.resolve(baseDir, p));
  const { broker, reader, update } = config;
  const emulated = reader.emulated && {
    ...reader.emulated,
    state_file: path.resolve(baseDir, reader.emulated.state_file),
  };
  return {
    ...config,
    broker: omitUndefined({
      ...broker,
      cert: at(broker.cert),
      key: at(broker.key),
      ca: at(broker.ca),
    }),
    reader: emulated ? { ...reader, emulated } : reader,
    data_dir: path.resolve(baseDir, config.data_dir),
    ...(update
      ? {
          update: {
            ...update,
            root: path.resolve(baseDir, update.root),
            public_key: path.resolve(baseDir, update.public_key),
          },
        }
      : {}),
  };
}

function unreadableFiles(config: AgentConfig): string[] {
  const problems: string[] = [];
  for (const field of ['cert', 'key', 'ca'] as const) {
    const file = config.broker[field];
    if (file === undefined) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch {
      problems.push(`broker.${field}: cannot read ${file}`);
    }
  }
  if (config.update) {
    try {
      accessSync(config.update.public_key, constants.R_OK);
    } catch {
      problems.push(`update.public_key: cannot read ${config.update.public_key}`);
    }
  }
  return problems;
}

/** `HOST:PORT` split, or undefined when it is not one (an IPv6 host goes in brackets). */
export function parseHostPort(value: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (!match || port < 1 || port > 65_535) return undefined;
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
}

function isBrokerUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'mqtt:' || url.protocol === 'mqtts:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** Releases come over HTTPS, or plain HTTP from this machine itself (tests, a local relay). */
function isReleaseSource(value: string): boolean {
  try {
    const url = new URL(value);
    const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
    return url.protocol === 'https:' || (url.protocol === 'http:' && loopback);
  } catch {
    return false;
  }
}

function omitUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
