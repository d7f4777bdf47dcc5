/**
 * `tps fleet config get|set`: a layer of desired configuration, and for each terminal it
 * reaches, desired, reported and whether they agree (docs/fleet.md, "Configuration");
 * `merchant-settings` is merchant-settings-cli.ts.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { UsageError, parseCommandLine } from '../../common/cli.js';
import { printable, printableJson } from '../../common/terminal-text.js';
import { describeZodError } from '../../protocol/error-body.js';
import {
  FleetConfig,
  FleetConfigResponse,
  type ConfigScope,
  type TerminalConfigView,
} from '../../protocol/index.js';
import {
  OPERATOR_ENV,
  accessOptions,
  actingAccount,
  actingHelp,
  actingOptions,
  callRelay,
} from '../relay-call.js';
import { MERCHANT_SETTINGS_USAGE, runMerchantSettings } from './merchant-settings-cli.js';

const LEVEL = `One level: a terminal's own, its cohort's, the account's, or the relay's. A terminal's
effective configuration is the relay's, overlaid by the account's, its cohort's, then its
own (of the account's levels, only the settings the operator lets merchants set count).
The command then lists, for each terminal the level reaches, the desired version, what its
agent reported and whether they agree (the first 1,000).

  --terminal ID                a terminal's own level
  --cohort cohort-NAME         a cohort's level
  --account                    the account's level
  --relay                      the relay's level, under every account's (the operator's)
${actingHelp(31).trimEnd()}`;

const ACCESS = `  --json                       print the relay's answer as JSON
  --base-url, --username, --password   the relay and the account credential
                               (TPS_BASE_URL, TPS_ACCOUNT_USERNAME, TPS_ACCOUNT_PASSWORD;
                               with --relay the operator's: TPS_OPERATOR_USERNAME,
                               TPS_OPERATOR_PASSWORD)
  -h, --help                   this text`;

const SCOPES = '--terminal ID | --cohort cohort-NAME | --account | --relay';

export const CONFIG_GET_USAGE = `Usage: tps fleet config get (${SCOPES}) [--json]

Shows the desired configuration of ${LEVEL.slice(0, 1).toLowerCase()}${LEVEL.slice(1)}
${ACCESS}
`;

export const CONFIG_SET_USAGE = `Usage: tps fleet config set (${SCOPES}) [settings] [--json]

Changes the desired configuration of ${LEVEL.slice(0, 1).toLowerCase()}${LEVEL.slice(1)}

It changes only the settings given (and --unset ones); --replace makes the level exactly
what is given, --file FILE.json reads the whole level from a file.

Settings:
  --heartbeat-s N              seconds between status heartbeats (1-3600)
  --log-level LEVEL            fatal, error, warn, info, debug, trace or silent
  --printer-head-width DOTS    384 (58 mm paper), 576 (80 mm): a multiple of 8
  --idle-screen-text TEXT      what the terminal shows while it waits (up to 64 characters)
  --reader-baud-rate N         the card reader's line speed
  --reader-profile NAME        a ZVT terminal's vendor profile (docs/zvt.md)
  --maintenance-window HH:MM-HH:MM   when updates may run (UTC)
  --local-api on|off           local mode: the agent serves the POS API on the shop's network
  --local-api-listen HOST:PORT where it listens (default 0.0.0.0:8443; [::]:8443 for IPv6)
  --local-api-plain-http on|off  plain HTTP instead of TLS, for benches (needs --local-api on)
  --local-api-max-amount N     largest payment while the relay is unreachable (minor units)
  --local-api-max-pending-count N   payments not yet forwarded, at most
  --local-api-max-pending-total N   their amounts together, at most (minor units)
  --local-api-max-pending-age-s N   the oldest not forwarded, at most this old
  --unset NAME                 no longer set at this level (e.g. --unset log_level); repeatable
  --replace                    the level becomes exactly the settings given
  --file FILE                  the whole level as JSON, e.g. {"heartbeat_s": 60}

Options:
${ACCESS}
`;

export const CONFIG_USAGE = `${CONFIG_GET_USAGE}\n${CONFIG_SET_USAGE}\n${MERCHANT_SETTINGS_USAGE}`;

const settingOptions = {
  'heartbeat-s': { type: 'string' },
  'log-level': { type: 'string' },
  'printer-head-width': { type: 'string' },
  'idle-screen-text': { type: 'string' },
  'reader-baud-rate': { type: 'string' },
  'reader-profile': { type: 'string' },
  'maintenance-window': { type: 'string' },
  'local-api': { type: 'string' },
  'local-api-listen': { type: 'string' },
  'local-api-plain-http': { type: 'string' },
  'local-api-max-amount': { type: 'string' },
  'local-api-max-pending-count': { type: 'string' },
  'local-api-max-pending-total': { type: 'string' },
  'local-api-max-pending-age-s': { type: 'string' },
  unset: { type: 'string', multiple: true },
  replace: { type: 'boolean' },
  file: { type: 'string' },
} as const;

export async function runFleetConfig(argv: string[]): Promise<void> {
  const [action, ...rest] = argv;
  if (action === undefined || action === '--help' || action === '-h') {
    process.stdout.write(CONFIG_USAGE);
    return;
  }
  if (action === 'merchant-settings') return runMerchantSettings(rest);
  if (action !== 'get' && action !== 'set') {
    throw new UsageError(`unknown command 'fleet config ${action}'`, CONFIG_USAGE);
  }
  const usage = action === 'get' ? CONFIG_GET_USAGE : CONFIG_SET_USAGE;
  const { values } = parseCommandLine(
    {
      args: rest,
      options: {
        ...accessOptions,
        ...actingOptions,
        ...settingOptions,
        terminal: { type: 'string' },
        cohort: { type: 'string' },
        account: { type: 'boolean' },
        relay: { type: 'boolean' },
      },
    },
    usage,
  );
  if (values.help) return void process.stdout.write(usage);
  const setting = Object.keys(settingOptions).find((name) => name in values);
  if (action === 'get' && setting !== undefined) {
    throw new UsageError(`--${setting} is for 'tps fleet config set'`, usage);
  }
  const scopes: ConfigScope[] = [
    ...(values.terminal !== undefined ? [{ terminal_id: values.terminal }] : []),
    ...(values.cohort !== undefined ? [{ cohort: values.cohort }] : []),
    ...(values.account ? [{ account: true as const }] : []),
    ...(values.relay ? [{ relay: true as const }] : []),
  ];
  if (scopes.length !== 1) {
    throw new UsageError('one of --terminal ID, --cohort cohort-NAME, --account or --relay', usage);
  }
  const scope = scopes[0]!;
  if ('relay' in scope && values['account-id'] !== undefined) {
    throw new UsageError("--relay is every account's level: it takes no --account-id", usage);
  }
  // The relay's level is the operator's, as is an account's it names: its credential.
  const acting = actingAccount(values, usage);
  const env = 'relay' in scope ? OPERATOR_ENV : acting.env;
  if (action === 'set') {
    // Each setting given, checked with the relay's own schema before anything is sent: a
    // bad value is a usage error, as on every command. Rules across settings (plain HTTP
    // needs local mode on) wait for the level they join, read below.
    const given = FleetConfig.safeParse(layerFrom(values, {}));
    const own = given.success ? [] : given.error.issues.filter((i) => i.code !== 'custom');
    if (own.length > 0) {
      throw new UsageError(`not a valid setting: ${describeZodError(new z.ZodError(own))}`, usage);
    }
  }
  let answer = FleetConfigResponse.parse(
    await callRelay(values, '/fleet/config/get', { ...acting.named, scope }, usage, env),
  );
  if (action === 'set') {
    // The level as it would be, checked before it is sent (the relay checks it too).
    const config = layerFrom(values, answer.layer);
    const merged = FleetConfig.safeParse(config);
    if (!merged.success) {
      throw new UsageError(`not a valid setting: ${describeZodError(merged.error)}`, usage);
    }
    answer = FleetConfigResponse.parse(
      await callRelay(values, '/fleet/config/set', { ...acting.named, scope, config }, usage, env),
    );
  }
  if (values.json) {
    process.stdout.write(`${printableJson(answer, 2)}\n`);
    return;
  }
  process.stdout.write(render(scope, answer));
}

/** The layer `set` sends: the current one changed by the options, or what they replace it with. */
function layerFrom(
  values: {
    [K in keyof typeof settingOptions]?: K extends 'unset'
      ? string[]
      : K extends 'replace'
        ? boolean
        : string;
  },
  current: FleetConfig,
): Record<string, unknown> {
  if (values.file !== undefined)
    return JSON.parse(readFileSync(values.file, 'utf8')) as Record<string, unknown>;
  const layer: Record<string, unknown> = values.replace ? {} : structuredClone(current);
  const reader: Record<string, unknown> = (layer.reader as Record<string, unknown>) ?? {};
  const int = (text: string) => (/^\d+$/.test(text) ? Number(text) : text);
  if (values['heartbeat-s'] !== undefined) layer.heartbeat_s = int(values['heartbeat-s']);
  if (values['log-level'] !== undefined) layer.log_level = values['log-level'];
  if (values['printer-head-width'] !== undefined) {
    layer.printer_head_width = int(values['printer-head-width']);
  }
  if (values['idle-screen-text'] !== undefined) layer.idle_screen_text = values['idle-screen-text'];
  if (values['reader-baud-rate'] !== undefined) reader.baud_rate = int(values['reader-baud-rate']);
  if (values['reader-profile'] !== undefined) reader.profile = values['reader-profile'];
  if (values['maintenance-window'] !== undefined) {
    const [start, end] = values['maintenance-window'].split('-');
    layer.maintenance_window = { start, end };
  }
  layer.reader = reader;
  const localApi = localApiFrom(values, layer.local_api as Record<string, unknown> | undefined);
  if (localApi) layer.local_api = localApi;
  for (const name of values.unset ?? []) {
    if (name.startsWith('reader.')) delete reader[name.slice('reader.'.length)];
    else delete layer[name.replaceAll('-', '_')];
  }
  if (Object.keys(reader).length === 0) delete layer.reader;
  return layer;
}

/** `on`/`off` as booleans; anything else goes as given, for the relay to name. */
const onOff = (text: string) => (text === 'on' ? true : text === 'off' ? false : text);

/** The layer's `local_api` changed by the --local-api options; undefined: none given. */
function localApiFrom(
  values: Record<string, string | string[] | boolean | undefined>,
  current: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  const given = (name: string) => values[`local-api${name}`] as string | undefined;
  const int = (text: string) => (/^\d+$/.test(text) ? Number(text) : text);
  const local: Record<string, unknown> = structuredClone(current ?? {});
  const bounds: Record<string, unknown> =
    (local.while_unreachable as Record<string, unknown>) ?? {};
  let changed = false;
  const set = (target: Record<string, unknown>, key: string, value: unknown) => {
    target[key] = value;
    changed = true;
  };
  if (given('') !== undefined) set(local, 'enabled', onOff(given('')!));
  if (given('-plain-http') !== undefined) set(local, 'plain_http', onOff(given('-plain-http')!));
  const listen = given('-listen');
  if (listen !== undefined) {
    const colon = listen.lastIndexOf(':');
    const host = listen.slice(0, Math.max(colon, 0)).replace(/^\[(.*)\]$/, '$1');
    set(local, 'listen', { host, port: int(listen.slice(colon + 1)) });
  }
  for (const [option, field] of [
    ['-max-amount', 'max_amount'],
    ['-max-pending-count', 'max_pending_count'],
    ['-max-pending-total', 'max_pending_total'],
    ['-max-pending-age-s', 'max_pending_age_seconds'],
  ] as const) {
    const value = given(option);
    if (value !== undefined) set(bounds, field, int(value));
  }
  if (Object.keys(bounds).length) local.while_unreachable = bounds;
  return changed ? local : undefined;
}

function render(scope: ConfigScope, answer: FleetConfigResponse): string {
  const level =
    'terminal_id' in scope
      ? `terminal ${scope.terminal_id}`
      : 'cohort' in scope
        ? `cohort ${scope.cohort}`
        : 'account' in scope
          ? 'the account'
          : 'the relay (under every account)';
  const lines = [
    `Configuration set for ${level}${answer.changed_at ? ` (changed ${answer.changed_at})` : ''}:`,
    `  ${Object.keys(answer.layer).length ? printableJson(answer.layer) : '(nothing set at this level)'}`,
    '',
    `${answer.terminals.length} terminal(s):`,
    ...answer.terminals.map(terminalLine),
  ];
  return `${lines.join('\n')}\n`;
}

/** One terminal's lines; what its agent reported is shown, never obeyed (common/terminal-text.ts). */
function terminalLine(view: TerminalConfigView): string {
  const { reported } = view;
  const state = !reported
    ? 'not reported yet'
    : reported.status === 'REJECTED'
      ? `REJECTED ${reported.version}: ${printable(reported.reason ?? '')} (in force: ${reported.applied_version ?? 'its file alone'})`
      : `${reported.status} ${reported.version}`;
  return [
    `  ${view.terminal_id}  ${view.in_sync ? 'in sync' : 'NOT in sync'}`,
    `    desired  ${view.desired.version}  ${printableJson(view.desired.config)}`,
    `    reported ${state}`,
  ].join('\n');
}
