/** The account's calls to a running relay, for the commands that make them (docs/cli.md). */
import { z } from 'zod';
import { UsageError } from '../common/cli.js';
import { unreachableText } from '../common/network-error.js';
import { AccountId } from '../protocol/index.js';

/** How long a call to the relay may take before the command gives up (docs/cli.md). */
export const RELAY_CALL_TIMEOUT_MS = 30_000;

/** Which environment variables hold the credential a command signs in with. */
export interface CredentialEnv {
  /** The name of the variable that holds the username. */
  usernameVar: string;
  /** The name of the variable that holds the password (the name, never a value). */
  passwordVar: string;
}
export const ACCOUNT_ENV: CredentialEnv = {
  usernameVar: 'TPS_ACCOUNT_USERNAME',
  passwordVar: 'TPS_ACCOUNT_PASSWORD',
};
export const OPERATOR_ENV: CredentialEnv = {
  usernameVar: 'TPS_OPERATOR_USERNAME',
  passwordVar: 'TPS_OPERATOR_PASSWORD',
};

const relayAccessSchema = (env: CredentialEnv) => {
  const who = env === OPERATOR_ENV ? 'an operator' : 'an account';
  return z.object({
    baseUrl: z.url().default('http://127.0.0.1:8080/pos'),
    username: z
      .string({ error: `${who} username is needed (--username or ${env.usernameVar})` })
      .min(1, `${who} username is needed (--username or ${env.usernameVar})`),
    password: z
      .string({ error: `${who} password is needed (--password or ${env.passwordVar})` })
      .min(1, `${who} password is needed (--password or ${env.passwordVar})`),
  });
};

export const accessOptions = {
  json: { type: 'boolean' },
  'base-url': { type: 'string' },
  username: { type: 'string' },
  password: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `--account-id ACCOUNT_ID`: the operator acts for that merchant account (docs/tenants.md). */
export const actingOptions = { 'account-id': { type: 'string' } } as const;

/** The lines of a command's help that say what `--account-id` does, its text from `column`. */
export function actingHelp(column: number): string {
  const indent = ' '.repeat(column);
  const option = '  --account-id ID';
  return (
    (option.length < column ? option.padEnd(column) : `${option}\n${indent}`) +
    'as the operator, for the merchant account ID\n' +
    `${indent}(the credential from TPS_OPERATOR_USERNAME and\n` +
    `${indent}TPS_OPERATOR_PASSWORD)\n`
  );
}

/**
 * What `--account-id` makes of a call: the account named in its body, signed in with the
 * operator's credential instead of the account's. A malformed id is a UsageError, nothing sent.
 */
export function actingAccount(
  values: { 'account-id'?: string },
  usage: string,
): { named: { account_id?: string }; env: CredentialEnv } {
  const given = values['account-id'];
  if (given === undefined) return { named: {}, env: ACCOUNT_ENV };
  const id = AccountId.safeParse(given);
  if (!id.success) {
    throw new UsageError(
      `--account-id must be a merchant account id (acct-…), not '${given}'`,
      usage,
    );
  }
  return { named: { account_id: id.data }, env: OPERATOR_ENV };
}

/**
 * The relay's address and the credential (the account's, or `env`'s), from the options or
 * the environment;
 * a missing or malformed one is a UsageError (with `usage`).
 */
export function relayAccess(
  values: { 'base-url'?: string; username?: string; password?: string },
  usage?: string,
  env: CredentialEnv = ACCOUNT_ENV,
) {
  const parsed = relayAccessSchema(env).safeParse({
    baseUrl: values['base-url'] ?? process.env.TPS_BASE_URL,
    username: values.username ?? process.env[env.usernameVar],
    password: values.password ?? process.env[env.passwordVar],
  });
  if (!parsed.success) {
    throw new UsageError(
      parsed.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`).join('\n'),
      usage,
    );
  }
  return parsed.data;
}

/**
 * Calls an account-level operation of a running relay. A missing or wrong credential or
 * address is a UsageError (with `usage`); no answer names the address and the cause.
 */
export async function callRelay(
  values: { 'base-url'?: string; username?: string; password?: string },
  operation: string,
  body: object | undefined,
  usage?: string,
  env: CredentialEnv = ACCOUNT_ENV,
): Promise<unknown> {
  const { baseUrl, username, password } = relayAccess(values, usage, env);
  const url = `${baseUrl.replace(/\/$/, '')}/v1${operation}`;
  let response: Response;
  let text: string;
  try {
    const authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
    // Without a body: a read (GET), as the rollouts' and releases' resources are read.
    response = await fetch(url, {
      method: body === undefined ? 'GET' : 'POST',
      headers:
        body === undefined
          ? { authorization }
          : { authorization, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(RELAY_CALL_TIMEOUT_MS),
    });
    text = await response.text();
  } catch (error) {
    // A request that left but got no answer in time may have been carried out.
    const maybeDone =
      error instanceof Error && error.name === 'TimeoutError'
        ? '; it may have been done all the same: look before running this again'
        : '';
    throw new Error(`cannot reach the relay: ${unreachableText(url, error)}${maybeDone}`, {
      cause: error,
    });
  }
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw new Error(`the relay at ${url} answered ${response.status} without JSON: is it a relay?`);
  }
  if (!response.ok) {
    throw new Error(`the relay answered ${response.status}: ${JSON.stringify(answer)}`);
  }
  return answer;
}

/** The one subcommand a group takes (`create`), or a UsageError naming what was given. */
export function subcommand(
  positionals: string[],
  allowed: readonly string[],
  usage: string,
): string {
  const [name, ...extra] = positionals;
  if (name === undefined || !allowed.includes(name)) {
    throw new UsageError(
      name === undefined
        ? `a command is needed: ${allowed.join(' or ')}`
        : `unknown command '${name}'`,
      usage,
    );
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`, usage);
  return name;
}
