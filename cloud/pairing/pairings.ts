/**
 * Pairing a fresh agent with a short code instead of a copied secret (docs/fleet.md,
 * docs/security.md):
 *
 * 1. The agent asks for a code (`start`), naming the SHA-256 of a secret it keeps.
 * 2. Someone with the account credential claims the code (`claim`): the terminal is
 *    created in their account with the name and cohort they chose, and a TerminalPaired
 *    event is written, in one commit. A code is claimed once, before it expires.
 * 3. The agent, waiting (`wait`, a long poll), shows its secret and receives its broker
 *    credential: a new password each time it collects, only the hash of which is kept.
 *    Whoever read the code over a shoulder has no secret, and so no credential.
 *
 * Unauthenticated requests are limited per source address, failed claims per credential.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import {
  formatPairingCode,
  type PairingStartResponse,
  type PairingWaitResponse,
  type TerminalClaimRequest,
  type TerminalClaimResponse,
} from '../../protocol/index.js';
import { sleep, type Clock, type Timers } from '../../common/clock.js';
import { hashForBroker } from '../accounts/mosquitto-hash.js';
import type { Principal } from '../accounts/principal.js';
import type { Cancellation } from '../cancellation.js';
import { ApiError } from '../errors.js';
import type { EventFeed } from '../events/event-feed.js';
import { newAgentTerminalId, newEventId, newSecret } from '../ids.js';
import type { PairingRecord, TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { TerminalRegistry } from '../terminals/registry.js';
import { AttemptLimit } from './attempt-limit.js';
import { newPairingCode, pairingSecretHash } from './codes.js';

export interface PairingSettings {
  /** How long a code may be claimed, and a claimed pairing collected. */
  ttlMs: number;
  /** Length of a counting window of the limits. */
  windowMs: number;
  /** Codes asked for, and waits with an unknown secret, per source address per window. */
  perSource: number;
  /** Failed claims per credential per window. */
  claimFailuresPerCredential: number;
}

/** How often a wait reads the store again: a claim made through another relay is seen then. */
const POLL_MS = 1000;

export class Pairings {
  private readonly sources: AttemptLimit;
  private readonly claimers: AttemptLimit;
  /** Claims made through this relay wake its waits at once. */
  private readonly claimed = new EventEmitter().setMaxListeners(0);

  constructor(
    private readonly options: {
      store: Store;
      registry: TerminalRegistry;
      feed: EventFeed;
      clock: Clock;
      timers: Timers;
      settings: PairingSettings;
      /** The broker address agents are told to use. */
      brokerUrl: () => string;
      logger: Logger;
    },
  ) {
    const now = () => options.clock.now().getTime();
    const { settings } = options;
    this.sources = new AttemptLimit(settings.perSource, settings.windowMs, now);
    this.claimers = new AttemptLimit(settings.claimFailuresPerCredential, settings.windowMs, now);
  }

  async start(secretSha256: string, source: string): Promise<PairingStartResponse> {
    this.limit(this.sources, source, 'pairing codes asked for from this address');
    this.sources.count(source);
    const { store, clock, settings } = this.options;
    if (await store.findPairing(secretSha256)) {
      throw new ApiError('INVALID_REQUEST', 'secret_sha256: already used; draw a new secret');
    }
    const now = clock.now();
    const expiresAt = new Date(now.getTime() + settings.ttlMs).toISOString();
    // 2^40 codes: drawing one that is taken is rare, twice in a row rarer still.
    for (;;) {
      const code = newPairingCode();
      const created = await store.createPairing({
        secretHash: secretSha256,
        code,
        createdAt: now.toISOString(),
        expiresAt,
      });
      if (created) return { code: formatPairingCode(code), expires_at: expiresAt };
    }
  }

  async wait(
    secret: string,
    waitMs: number,
    gone: Cancellation,
    source: string,
  ): Promise<PairingWaitResponse> {
    const secretHash = pairingSecretHash(secret);
    // Counted in naps rather than read off the clock: the clock decides expiry only.
    let remaining = waitMs;
    for (;;) {
      const pairing = await this.options.store.findPairing(secretHash);
      if (!pairing) {
        this.limit(this.sources, source, 'unknown pairings asked after from this address');
        this.sources.count(source);
        throw new ApiError('PAIRING_NOT_FOUND', 'no pairing was started with this secret');
      }
      const now = this.options.clock.now().getTime();
      if (pairing.claim) return this.collect(pairing.claim, now);
      const untilExpiry = Date.parse(pairing.expiresAt) - now;
      if (untilExpiry <= 0) {
        throw new ApiError(
          'PAIRING_EXPIRED',
          `the code expired at ${pairing.expiresAt} unclaimed; ask for a new one`,
        );
      }
      if (remaining <= 0 || gone.cancelled) {
        return { state: 'WAITING', expires_at: pairing.expiresAt };
      }
      const nap = Math.min(remaining, untilExpiry, POLL_MS);
      remaining -= nap;
      await this.claimOrTimeout(nap, gone);
    }
  }

  async claim(
    principal: Principal,
    credential: string,
    request: TerminalClaimRequest,
  ): Promise<TerminalClaimResponse> {
    if (principal.terminalId !== undefined) {
      throw new ApiError('FORBIDDEN', 'only an account credential can claim a terminal');
    }
    this.limit(this.claimers, credential, 'failed claims by this credential');
    const { store, clock, registry } = this.options;
    const at = clock.now().toISOString();
    let terminalId = newAgentTerminalId();
    while (await store.getTerminal(terminalId)) terminalId = newAgentTerminalId();
    const name = request.name ?? terminalId;
    const claim = {
      accountId: principal.accountId,
      terminalId,
      name,
      ...(request.cohort ? { cohort: request.cohort } : {}),
      claimedBy: credential,
      claimedAt: at,
    };
    const terminal: TerminalRecord = {
      id: terminalId,
      accountId: principal.accountId,
      kind: 'AGENT',
      capabilities: { printer: request.printer ?? false, battery: request.battery ?? false },
      status: { terminal_id: terminalId, updated_at: at, connected: false },
      createdAt: at,
      name,
      ...(request.cohort ? { cohort: request.cohort } : {}),
    };
    const event = {
      id: newEventId(),
      accountId: principal.accountId,
      subject: terminalId,
      kind: 'TerminalPaired' as const,
      time: at,
      data: {
        terminal_id: terminalId,
        name,
        ...(request.cohort ? { cohort: request.cohort } : {}),
        claimed_by: credential,
        paired_at: at,
      },
    };
    const outcome = await store.claimPairing(request.code, claim, terminal, event);
    const shown = formatPairingCode(request.code);
    if (outcome !== 'claimed') {
      this.claimers.count(credential);
      this.options.logger.info({ code: shown, outcome }, 'pairing claim refused');
    }
    if (outcome === 'unknown') {
      throw new ApiError('PAIRING_NOT_FOUND', `no terminal waits with the code ${shown}`);
    }
    if (outcome === 'expired') {
      throw new ApiError('PAIRING_EXPIRED', `the code ${shown} has expired; pair again`);
    }
    if (outcome === 'used') {
      throw new ApiError('PAIRING_CODE_USED', `the code ${shown} was claimed already`);
    }
    this.options.feed.publish([event]);
    this.claimed.emit('claimed');
    this.options.logger.info({ terminalId, cohort: request.cohort }, 'terminal paired');
    const issued = await registry.issuePosCredential(principal.accountId, terminalId, at);
    return {
      terminal_id: terminalId,
      name,
      ...(request.cohort ? { cohort: request.cohort } : {}),
      username: issued.username,
      password: issued.password,
    };
  }

  /** A new broker password for the paired agent; the previous one stops working. */
  private async collect(
    claim: NonNullable<PairingRecord['claim']>,
    now: number,
  ): Promise<PairingWaitResponse> {
    const collectBy = Date.parse(claim.claimedAt) + this.options.settings.ttlMs;
    if (now >= collectBy) {
      throw new ApiError(
        'PAIRING_EXPIRED',
        `terminal ${claim.terminalId} was paired at ${claim.claimedAt}; its credential can no longer be collected`,
      );
    }
    const password = newSecret();
    await this.options.store.putAgentCredential(
      claim.terminalId,
      hashForBroker(password),
      new Date(now).toISOString(),
    );
    this.options.logger.info({ terminalId: claim.terminalId }, 'paired agent collected');
    return {
      state: 'PAIRED',
      terminal_id: claim.terminalId,
      name: claim.name,
      ...(claim.cohort ? { cohort: claim.cohort } : {}),
      broker: { url: this.options.brokerUrl(), username: claim.terminalId, password },
    };
  }

  private claimOrTimeout(ms: number, gone: Cancellation): Promise<void> {
    const abort = new AbortController();
    const wake = () => abort.abort();
    this.claimed.once('claimed', wake);
    gone.add(wake);
    return sleep(ms, abort.signal, this.options.timers).finally(() => {
      this.claimed.off('claimed', wake);
      gone.remove(wake);
    });
  }

  private limit(limit: AttemptLimit, key: string, what: string): void {
    const wait = limit.check(key);
    if (wait !== undefined) {
      throw new ApiError('TOO_MANY_REQUESTS', `too many ${what}; wait ${wait} s`, {
        'retry-after': String(wait),
      });
    }
  }
}
