/** `tps fleet release publish FILE`: publishes an agent release to the relay (docs/fleet.md). */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { RELEASE_PUBLISH_PATH, ReleaseView } from '../../protocol/index.js';
import { accessOptions, relayAccess } from '../cli.js';

export const RELEASE_USAGE = `Usage: tps fleet release publish FILE [options]

Publishes an agent release: FILE is the archive 'npm run package:agent' builds
(tps-agent-VERSION-ARCH.tar.gz). The relay checks it whole against its release key
(TPS_RELEASE_PUBLIC_KEY) and keeps it for the account's agents; a version is published
once per architecture.

  --json                  print the release as JSON
  --base-url, --username, --password   as for 'tps simulator create'
`;

export async function runRelease(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: accessOptions,
    allowPositionals: true,
  });
  if (values.help || positionals[0] !== 'publish' || positionals.length !== 2) {
    process.stdout.write(RELEASE_USAGE);
    if (!values.help) process.exitCode = 2;
    return;
  }
  const { baseUrl, username, password } = relayAccess(values);
  const response = await fetch(`${baseUrl.replace(/\/$/, '')}${RELEASE_PUBLISH_PATH}`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
      'content-type': 'application/gzip',
    },
    body: fs.readFileSync(positionals[1]!),
  });
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
