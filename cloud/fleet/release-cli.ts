/** `tps fleet release publish FILE`: the operator publishes an agent release (docs/fleet.md). */
import fs from 'node:fs';
import { RELEASE_PUBLISH_PATH, ReleaseView } from '../../protocol/index.js';
import { UsageError, parseCommandLine } from '../../common/cli.js';
import { unreachableText } from '../../common/network-error.js';
import { OPERATOR_ENV, accessOptions, relayAccess, subcommand } from '../relay-call.js';

export const RELEASE_USAGE = `Usage: tps fleet release publish FILE [options]

Publishes an agent release: FILE is the archive 'npm run package:agent' builds
(tps-agent-VERSION-ARCH.tar.gz). The relay checks it whole against its release key
(TPS_RELEASE_PUBLIC_KEY) and keeps it for every terminal's agent; a version is published
once per architecture. Releases are the operator's: this signs in with its credential.

  --json                  print the release as JSON
  -h, --help              this text
  --base-url URL          the relay's API (default http://127.0.0.1:8080/pos, or TPS_BASE_URL)
  --username, --password  the operator's credential (or TPS_OPERATOR_USERNAME and
                          TPS_OPERATOR_PASSWORD)
`;

export async function runRelease(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(
    { args: argv, options: accessOptions, allowPositionals: true },
    RELEASE_USAGE,
  );
  if (values.help) return void process.stdout.write(RELEASE_USAGE);
  subcommand(positionals.slice(0, 1), ['publish'], RELEASE_USAGE);
  const file = positionals[1];
  if (file === undefined || positionals.length > 2) {
    throw new UsageError('one archive FILE is needed', RELEASE_USAGE);
  }
  const { baseUrl, username, password } = relayAccess(values, RELEASE_USAGE, OPERATOR_ENV);
  const archive = fs.readFileSync(file);
  const url = `${baseUrl.replace(/\/$/, '')}${RELEASE_PUBLISH_PATH}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
        'content-type': 'application/gzip',
      },
      body: archive,
    });
  } catch (error) {
    throw new Error(`cannot reach the relay: ${unreachableText(url, error)}`, { cause: error });
  }
  const answer: unknown = await response.json().catch(() => undefined);
  if (!response.ok) {
    throw new Error(`the relay answered ${response.status}: ${JSON.stringify(answer)}`);
  }
  const release = ReleaseView.parse((answer as { release?: unknown }).release);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(release)}\n`);
    return;
  }
  process.stdout.write(
    `Published tps-agent ${release.version} for ${release.arch}: ${release.files} files, ` +
      `${release.archive_size} bytes, sha256 ${release.archive_sha256}\n`,
  );
}
