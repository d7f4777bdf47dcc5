/** `tps account`: the operator's merchant accounts on a running relay (docs/tenants.md). */
import { UsageError, parseCommandLine } from '../common/cli.js';
import { printable } from '../common/terminal-text.js';
import {
  AccountCreateRequest,
  AccountCreateResponse,
  AccountId,
  AccountListResponse,
  AccountResponse,
  type AccountView,
} from '../protocol/index.js';
import { OPERATOR_ENV, accessOptions, callRelay } from './relay-call.js';

export const ACCOUNT_USAGE = `Usage: tps account list | create NAME | get|disable|enable ACCOUNT_ID [options]

The operator's merchant accounts on a running relay.

  create NAME          a merchant account; its account credential is printed this once
  list                 every account, the operator's own among them
  get ACCOUNT_ID       one account
  disable ACCOUNT_ID   its credentials, its terminals' and its console sessions are refused
                       on every relay at once; nothing of it is deleted
  enable ACCOUNT_ID    takes it back, with the same credentials
  --json               print the relay's answer as JSON
  --base-url URL       the relay's API (default http://127.0.0.1:8080/pos, or TPS_BASE_URL)
  --username, --password   the operator's credential (or TPS_OPERATOR_USERNAME and
                       TPS_OPERATOR_PASSWORD)
  -h, --help           this text
`;

const ACTIONS = ['create', 'list', 'get', 'disable', 'enable'] as const;

export async function runAccount(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(
    { args: argv, options: accessOptions, allowPositionals: true },
    ACCOUNT_USAGE,
  );
  if (values.help) return void process.stdout.write(ACCOUNT_USAGE);
  const [action, argument, ...extra] = positionals;
  if (action === undefined || !(ACTIONS as readonly string[]).includes(action)) {
    throw new UsageError(
      action === undefined
        ? `a command is needed: ${ACTIONS.join(', ')}`
        : `unknown command 'account ${action}'`,
      ACCOUNT_USAGE,
    );
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`, ACCOUNT_USAGE);
  const call = (operation: string, body: object) =>
    callRelay(values, operation, body, ACCOUNT_USAGE, OPERATOR_ENV);
  const print = (answer: unknown, text: () => string) =>
    process.stdout.write(values.json ? `${JSON.stringify(answer)}\n` : text());

  if (action === 'list') {
    if (argument !== undefined) {
      throw new UsageError(`unexpected argument '${argument}'`, ACCOUNT_USAGE);
    }
    const answer = AccountListResponse.parse(await call('/account/list', {}));
    return void print(answer, () => answer.accounts.map(line).join(''));
  }
  if (action === 'create') {
    // Checked as the relay checks it, before anything is sent.
    const request = AccountCreateRequest.safeParse({ name: argument });
    if (!request.success) {
      throw new UsageError('create needs a NAME of 1-64 printable ASCII characters', ACCOUNT_USAGE);
    }
    const answer = AccountCreateResponse.parse(await call('/account/create', request.data));
    return void print(
      answer,
      () =>
        line(answer.account) +
        `  username ${answer.credential.username}\n  password ${answer.credential.password}\n` +
        '(the account credential, shown this once: give it to the merchant)\n',
    );
  }
  const id = AccountId.safeParse(argument);
  if (!id.success) {
    throw new UsageError(`${action} needs an ACCOUNT_ID (acct-…)`, ACCOUNT_USAGE);
  }
  const answer = AccountResponse.parse(await call(`/account/${action}`, { account_id: id.data }));
  print(answer, () => line(answer.account));
}

/** One account a line: id, kind, name, and since when it is disabled. */
function line(account: AccountView): string {
  const disabled = account.disabled_at ? `  disabled since ${account.disabled_at}` : '';
  const name = account.name ? `  ${printable(account.name)}` : '';
  return `${account.account_id}  ${account.kind}${name}${disabled}\n`;
}
