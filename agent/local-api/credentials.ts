/**
 * The verifiers of this terminal's POS credentials, as the relay last delivered them
 * (protocol/local-credentials.ts; docs/local-mode.md, "Credentials and trust"). Kept in
 * `local-credentials.json` in the data directory (mode 0600, written whole or not at all),
 * so that after a restart while the link is down the local API still verifies: a
 * credential revoked meanwhile still pays locally until the link carries the change.
 *
 * A set is taken only if its revision is not below the one kept: an older message
 * delivered again cannot bring back a credential revoked since. The same revision again is
 * the same credentials (the relay reads set and revision in one snapshot), taken as it is.
 */
import path from 'node:path';
import fs from 'node:fs';
import type { Logger } from 'pino';
import {
  LocalCredentialsMessage,
  type LocalCredentialsMessage as LocalCredentialSet,
} from '../../protocol/local-credentials.js';
import { writeWhole } from '../fleet-config.js';

export const LOCAL_CREDENTIALS_FILE = 'local-credentials.json';

export type ReceivedOutcome = 'kept' | 'older' | 'invalid';

export class LocalCredentials {
  private set: LocalCredentialSet | undefined;
  private byUsername = new Map<string, string>();

  private constructor(
    private readonly file: string,
    private readonly logger: Logger,
  ) {}

  /** The set kept in `dataDir`, if any (an unreadable file counts as none). */
  static open(dataDir: string, logger: Logger): LocalCredentials {
    const credentials = new LocalCredentials(path.join(dataDir, LOCAL_CREDENTIALS_FILE), logger);
    let kept: unknown;
    try {
      kept = JSON.parse(fs.readFileSync(credentials.file, 'utf8'));
    } catch {
      kept = undefined;
    }
    const parsed = LocalCredentialsMessage.safeParse(kept);
    if (parsed.success) credentials.use(parsed.data);
    else if (kept !== undefined) logger.warn('kept POS credential verifiers unreadable: none kept');
    return credentials;
  }

  /** The revision kept; undefined: none received yet. */
  get revision(): number | undefined {
    return this.set?.revision;
  }

  /** The verifier of a username, if the kept set has it. */
  verifier(username: string): string | undefined {
    return this.byUsername.get(username);
  }

  /** A message from the relay, unchecked. */
  received(value: unknown): ReceivedOutcome {
    const parsed = LocalCredentialsMessage.safeParse(value);
    if (!parsed.success) {
      this.logger.warn('invalid POS credential verifiers ignored');
      return 'invalid';
    }
    const message = parsed.data;
    if (this.set && message.revision < this.set.revision) {
      this.logger.info(
        { revision: message.revision, kept: this.set.revision },
        'older POS credential verifiers ignored',
      );
      return 'older';
    }
    writeWhole(this.file, message);
    this.use(message);
    this.logger.info(
      { revision: message.revision, credentials: message.credentials.length },
      'POS credential verifiers kept',
    );
    return 'kept';
  }

  private use(set: LocalCredentialSet): void {
    this.set = set;
    this.byUsername = new Map(set.credentials.map((c) => [c.username, c.verifier]));
  }
}
