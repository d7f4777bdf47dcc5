/**
 * `tps fleet config merchant-settings [get] | set NAME... | set --all | set --none`: which
 * settings merchants may set in their own layers, the operator's (docs/fleet.md, "Which
 * settings merchants may set").
 */
import { UsageError, parseCommandLine } from '../../common/cli.js';
import { printableJson } from '../../common/terminal-text.js';
import {
  FLEET_SETTING_NAMES,
  FleetSettingName,
  MerchantSettingsResponse,
} from '../../protocol/index.js';
import { OPERATOR_ENV, accessOptions, callRelay } from '../relay-call.js';

export const MERCHANT_SETTINGS_USAGE = `Usage: tps fleet config merchant-settings [get | set NAME... | set --all | set --none] [--json]

Which settings merchants may set in their own levels (account, cohort, terminal); the
operator's. Until it is set, every setting. A setting merchants may not set counts only
from the relay's level, or where the operator set it for an account; what merchants set of
it stays stored and counts again once they may. Every terminal gets its configuration
again.

  get                          the settings merchants may set (the default)
  set NAME...                  exactly these, each a top-level setting:
                               ${FLEET_SETTING_NAMES.join(', ')}
  --all                        with set: every setting
  --none                       with set: none
  --json                       print the relay's answer as JSON
  --base-url, --username, --password   the relay and the operator's credential
                               (TPS_BASE_URL, TPS_OPERATOR_USERNAME, TPS_OPERATOR_PASSWORD)
  -h, --help                   this text
`;

export async function runMerchantSettings(argv: string[]): Promise<void> {
  const usage = MERCHANT_SETTINGS_USAGE;
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: { ...accessOptions, all: { type: 'boolean' }, none: { type: 'boolean' } },
      allowPositionals: true,
    },
    usage,
  );
  if (values.help) return void process.stdout.write(usage);
  const [action = 'get', ...names] = positionals;
  const call = (operation: string, body: object) =>
    callRelay(values, operation, body, usage, OPERATOR_ENV);
  let answer: unknown;
  if (action === 'get') {
    if (names.length > 0) throw new UsageError(`unexpected argument '${names[0]}'`, usage);
    if (values.all || values.none) throw new UsageError('--all and --none are for set', usage);
    answer = await call('/fleet/config/merchant-settings/get', {});
  } else if (action === 'set') {
    answer = await call('/fleet/config/merchant-settings/set', {
      settings: settingsGiven(names, values, usage),
    });
  } else {
    throw new UsageError(`unknown command 'fleet config merchant-settings ${action}'`, usage);
  }
  const parsed = MerchantSettingsResponse.parse(answer);
  if (values.json) return void process.stdout.write(`${printableJson(parsed, 2)}\n`);
  const since = parsed.changed_at ? `set ${parsed.changed_at}` : 'never set: every setting';
  process.stdout.write(
    `Settings merchants may set (${since}):\n  ${parsed.settings.join(', ') || '(none)'}\n`,
  );
}

/** The list `set` sends: exactly one of names, --all or --none; each name a setting, once. */
function settingsGiven(
  names: string[],
  values: { all?: boolean | undefined; none?: boolean | undefined },
  usage: string,
): FleetSettingName[] {
  const ways = [names.length > 0, values.all === true, values.none === true].filter(Boolean);
  if (ways.length !== 1) throw new UsageError('set takes NAME..., --all or --none', usage);
  if (values.all) return [...FLEET_SETTING_NAMES];
  if (values.none) return [];
  const settings: FleetSettingName[] = [];
  for (const name of names.flatMap((given) => given.split(','))) {
    const setting = FleetSettingName.safeParse(name.replaceAll('-', '_'));
    if (!setting.success) {
      throw new UsageError(
        `not a setting: '${name}' (one of ${FLEET_SETTING_NAMES.join(', ')})`,
        usage,
      );
    }
    if (settings.includes(setting.data)) {
      throw new UsageError(`${setting.data} is given twice`, usage);
    }
    settings.push(setting.data);
  }
  return settings;
}
