/**
 * `tps agent pair`: a fresh terminal gets its credential by a short code instead of a
 * copied secret (docs/fleet.md, "Pairing"). The agent draws a secret, asks the relay for
 * a code naming the secret's hash, shows the code and waits; once someone with the
 * account credential has claimed the code, the agent shows the secret and receives its
 * terminal id and broker credential, and writes its config file (mode 0600).
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ErrorResponse, PairingStartResponse, PairingWaitResponse } from '../protocol/index.js';
import { Backoff } from '../common/backoff.js';
import { UsageError } from '../common/cli.js';
import { unreachableText } from '../common/network-error.js';
import { sleep } from '../common/clock.js';
import type { AgentConfigInput } from './config.js';

export interface PairOptions {
  /** The relay's API base address, e.g. https://relay.example.com/pos */
  relay: string;
  /** Where the config is written; must not exist. */
  configFile: string;
  reader: AgentConfigInput['reader'];
  dataDir?: string;
  write: (line: string) => void;
  /** The usage text a wrong --relay is reported with. */
  usage?: string;
  /** Seconds each wait asks the relay to hold (default 25). */
  waitSeconds?: number;
}

/** A failure the field engineer can act on; the message says how. */
export class PairingFailed extends Error {
  override readonly name = 'PairingFailed';
}

/** Only HTTPS carries the credential, except to this machine itself (tests, a local relay). */
function checkRelayUrl(relay: string, usage: string | undefined): URL {
  let url: URL;
  try {
    url = new URL(relay);
  } catch {
    throw new UsageError(`--relay must be a URL, e.g. https://relay.example.com/pos`, usage);
  }
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) {
    throw new UsageError(
      `--relay must be an https:// address: the broker credential travels over it (got ${url.protocol}//${url.host})`,
      usage,
    );
  }
  return url;
}

export async function pairAgent(options: PairOptions): Promise<{ terminalId: string }> {
  const base = checkRelayUrl(options.relay, options.usage).href.replace(/\/$/, '');
  if (fs.existsSync(options.configFile)) {
    throw new PairingFailed(
      `${options.configFile} exists: this terminal is paired already (remove the file to pair it again)`,
    );
  }
  const secret = randomBytes(32).toString('base64url');
  const secretSha256 = createHash('sha256').update(secret, 'utf8').digest('hex');
  const call = (operation: string, body: object) => post(`${base}/v1${operation}`, body);

  const started = PairingStartResponse.parse(
    await call('/pairing/start', { secret_sha256: secretSha256 }),
  );
  const expiresAt = Date.parse(started.expires_at);
  options.write(`Pairing code: ${started.code}`);
  options.write(
    `Claim it with the account credential: tps terminal claim ${started.code} --name NAME [--cohort cohort-…]`,
  );
  options.write(`The code expires at ${started.expires_at}. Waiting for the claim…`);

  const backoff = new Backoff({ initialMs: 1000, maxMs: 15_000 });
  for (;;) {
    let answer: PairingWaitResponse;
    try {
      answer = PairingWaitResponse.parse(
        await call('/pairing/wait', { secret, wait_seconds: options.waitSeconds ?? 25 }),
      );
      backoff.reset();
    } catch (error) {
      if (error instanceof PairingFailed) throw error;
      if (Date.now() >= expiresAt) throw expired(started.expires_at);
      const retryAfter = (error as { retryAfterMs?: number }).retryAfterMs;
      const ms = backoff.next(retryAfter);
      options.write(
        `The relay could not be reached (${(error as Error).message}); again in ${Math.ceil(ms / 1000)} s`,
      );
      await sleep(ms);
      continue;
    }
    if (answer.state === 'WAITING') {
      const left = Math.max(0, Math.round((Date.parse(answer.expires_at) - Date.now()) / 1000));
      options.write(`Still waiting for the claim of ${started.code} (${left} s left)…`);
      continue;
    }
    writeConfig(options, {
      terminal_id: answer.terminal_id,
      broker: answer.broker,
      reader: options.reader,
      printer: { type: 'none' },
      ...(options.dataDir ? { data_dir: options.dataDir } : {}),
    });
    options.write(
      `Paired: terminal ${answer.terminal_id} ("${answer.name}"${answer.cohort ? `, ${answer.cohort}` : ''}); config written to ${options.configFile} (mode 0600).`,
    );
    return { terminalId: answer.terminal_id };
  }
}

function expired(at: string): PairingFailed {
  return new PairingFailed(
    `The code expired at ${at} before anyone claimed it. Run 'tps agent pair' again for a new code.`,
  );
}

function writeConfig(options: PairOptions, config: AgentConfigInput): void {
  fs.mkdirSync(path.dirname(path.resolve(options.configFile)), { recursive: true });
  fs.writeFileSync(options.configFile, `${JSON.stringify(config, null, 2)}\n`, {
    mode: 0o600,
    flag: 'wx',
  });
}

/**
 * POSTs to the relay. The relay's refusals that pairing cannot get past (an expired or
 * unknown pairing, a bad request) are PairingFailed; a 429 or 5xx, or no answer, is
 * thrown as a plain error to be tried again, carrying Retry-After.
 */
async function post(url: string, body: object): Promise<unknown> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
  } catch (error) {
    throw new Error(unreachableText(url, error), { cause: error });
  }
  const answer: unknown = await response.json().catch(() => undefined);
  if (response.ok) return answer;
  const error = ErrorResponse.safeParse(answer);
  const code = error.success ? error.data.error.code : undefined;
  const description = error.success ? error.data.error.description : response.statusText;
  if (code === 'PAIRING_EXPIRED') {
    throw new PairingFailed(`${description}. Run 'tps agent pair' again for a new code.`);
  }
  if (response.status === 429 || response.status >= 500) {
    const retryAfter = Number(response.headers.get('retry-after'));
    throw Object.assign(new Error(`${response.status} ${code ?? ''}: ${description}`), {
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterMs: retryAfter * 1000 } : {}),
    });
  }
  throw new PairingFailed(
    `the relay refused pairing: ${response.status} ${code ?? ''}: ${description}`,
  );
}
