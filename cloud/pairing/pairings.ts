/**
 * Pairing a fresh agent with a short code instead of a copied secret (docs/fleet.md,
 * docs/security.md):
 *
 * 1. The agent asks for a code (`start`), naming the SHA-256 of a secret it keeps.
 * 2. Someone with the account credential claims the code (`claim`): the terminal is
 *    created in their account with the name and cohort they chose, and a TerminalPaired
 *    event is written, in one commit. A code is claimed once, before it expires.
 * 3. The agent, waiting (`wait`, a long poll), shows its secret and receives its broker
 *    credential, once: the collection spends the pairing, so a credential revoked or
 *    rotated since is never handed out again. Only its hash is kept. Whoever read the code
 *    over a shoulder has no secret, and so no credential.
 *
 * Unauthenticated requests are limited per source address: codes asked for and unknown
 * secrets per window, waits parked at once. A pairing has one wait parked at a time (a
 * newer one ends the older, which answers WAITING), woken by the claim, here or through
 * the change bus, rather than by reading the store again and again. Failed claims are
 * limited per credential and per account, counted before the store is asked.
 */
import type { Logger } from 'pino';
import {
  formatPairingCode,
  type PairingStartResponse,
  type PairingWaitResponse,
  type TerminalClaimRequest,
  type TerminalClaimResponse,
} from '../../protocol/index.js';
import type { Clock, Timers } from '../../common/clock.js';
import { hashForBroker } from '../accounts/mosquitto-hash.js';
import type { Principal } from '../accounts/principal.js';
import { Cancellation } from '../cancellation.js';
import type { ChangeBus } from '../cluster/change-bus.js';
import { ApiError } from '../errors.js';
import type { EventFeed } from '../events/event-feed.js';
import { newAgentTerminalId, newEventId, newSecret } from '../ids.js';
import { longPoll, ParkedWaits, type Parked } from '../long-poll.js';
import type { PairingRecord, TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { TerminalRegistry } from '../terminals/registry.js';
import { AttemptLimit, type TakenAttempt } from './attempt-limit.js';
import { newPairingCode, pairingSecretHash } from './codes.js';

export interface PairingSettings {
  /** How long a code may be claimed, and a claimed pairing collected. */
  ttlMs: number;
  /** Length of a counting window of the limits. */
  windowMs: number;
  /** Codes asked for, and waits with an unknown secret, per source address per window. */
  perSource: number;
  /** Waits parked at once per source address. */
  waitsPerSource: number;
  /** Failed claims per credential per window. */
  claimFailuresPerCredential: number;
  /** Failed claims per account per window, all its credentials together. */
  claimFailuresPerAccount: number;
}

/** A parked wait: the poll, and how to make it read its pairing again. */
interface PairingWait {
  parked: Parked<PairingWaitResponse | undefined>;
  readAgain(): void;
}

export class Pairings {
  private readonly sources: AttemptLimit;
  private readonly claimers: AttemptLimit;
  private readonly accounts: AttemptLimit;
  private readonly parkedBySource: ParkedWaits;
  /** The one wait parked per pairing, by code: a claim wakes it, a newer wait ends it. */
  private readonly waits = new Map<string, PairingWait>();
  /** Cancelled at shutdown: parked waits answer at once. */
  private readonly closing = new Cancellation();

  constructor(
    private readonly options: {
      store: Store;
      registry: TerminalRegistry;
      feed: EventFeed;
      /** Tells the other relays of a claim, so that the agent's wait parked there wakes. */
      bus: Pick<ChangeBus, 'announce'>;
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
    this.accounts = new AttemptLimit(settings.claimFailuresPerAccount, settings.windowMs, now);
    this.parkedBySource = new ParkedWaits(settings.waitsPerSource, 'this address');
  }

  stop(): void {
    this.closing.cancel();
  }

  /**
   * A pairing was claimed (here, or on another relay: change bus): its parked wait reads
   * it again. Without a code, every parked wait does (notices may have been missed).
   */
  claimed(code?: string): void {
    if (code !== undefined) this.waits.get(code)?.readAgain();
    else for (const wait of this.waits.values()) wait.readAgain();
  }

  async start(secretSha256: string, source: string): Promise<PairingStartResponse> {
    taken(this.sources.take(source), 'pairing codes asked for from this address');
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
    const { store, clock, timers } = this.options;
    const pairing = await store.findPairing(secretHash);
    if (!pairing) {
      // Counted as it is answered: of concurrent probes, only the limit's worth hear 404.
      // Not checked before the read: an address that asked for its codes (the same count)
      // still waits for them.
      taken(this.sources.take(source), 'unknown pairings asked after from this address');
      throw new ApiError('PAIRING_NOT_FOUND', 'no pairing was started with this secret');
    }
    const now = await this.answer(pairing);
    if (now) return now;

    // A newer wait ends the older one, which answers WAITING as if its time had run out.
    this.waits.get(pairing.code)?.parked.settle(undefined);
    const untilExpiry = Date.parse(pairing.expiresAt) - clock.now().getTime();
    const answered = await longPoll<PairingWaitResponse | undefined>(
      {
        waitMs: Math.min(waitMs, untilExpiry),
        otherwise: () => undefined,
        cancelledBy: [gone, this.closing],
        timers,
        parkedAs: { holder: source, waits: this.parkedBySource },
      },
      (parked) => this.park(pairing, parked),
    );
    return answered ?? this.stillWaiting(pairing);
  }

  async claim(principal: Principal, request: TerminalClaimRequest): Promise<TerminalClaimResponse> {
    if (principal.terminalId !== undefined) {
      throw new ApiError('FORBIDDEN', 'only an account credential can claim a terminal');
    }
    const claimer = principal.username;
    // Taken before the store is asked, given back if the claim succeeds.
    const byCredential = taken(this.claimers.take(claimer), 'failed claims by this credential');
    const byAccount = this.accounts.take(principal.accountId);
    if ('retryAfterS' in byAccount) {
      byCredential.giveBack();
      throw tooMany('failed claims by this account', byAccount.retryAfterS);
    }
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
      claimedBy: claimer,
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
        claimed_by: claimer,
        paired_at: at,
      },
    };
    const outcome = await store.claimPairing(request.code, claim, terminal, event);
    const shown = formatPairingCode(request.code);
    if (outcome !== 'claimed') {
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
    byCredential.giveBack();
    byAccount.giveBack();
    this.options.feed.publish([event]);
    this.claimed(request.code);
    // Without the notice, a wait parked on another relay still reads again when it ends.
    this.options.bus.announce({ kind: 'pairing', code: request.code }).catch((error: unknown) => {
      this.options.logger.warn({ err: error }, 'could not tell the other relays of a claim');
    });
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

  /**
   * Holds `parked` as its pairing's one wait, reading the pairing whenever a claim says
   * so, and once at once: a claim may have committed since the caller's read.
   */
  private park(
    pairing: PairingRecord,
    parked: Parked<PairingWaitResponse | undefined>,
  ): () => void {
    let reading = false;
    let again = false;
    const read = (): void => {
      if (parked.settled) return;
      // A wake during a read may tell of a commit that read did not see: read again.
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      this.options.store
        .findPairing(pairing.secretHash)
        .then((current) => (current?.claim ? this.answer(current) : undefined))
        .then(
          (answer) => {
            reading = false;
            if (answer) parked.settle(answer);
            else if (again) {
              again = false;
              read();
            }
          },
          (error: unknown) => parked.fail(error),
        );
    };
    const wait: PairingWait = { parked, readAgain: read };
    this.waits.set(pairing.code, wait);
    read();
    return () => {
      if (this.waits.get(pairing.code) === wait) this.waits.delete(pairing.code);
    };
  }

  /**
   * What a wait answers now: PAIRED with the credential (collecting it), a refusal, or
   * undefined while it waits for its claim.
   */
  private async answer(pairing: PairingRecord): Promise<PairingWaitResponse | undefined> {
    const now = this.options.clock.now().getTime();
    if (pairing.claim) return this.collect(pairing.secretHash, pairing.claim, now);
    if (now >= Date.parse(pairing.expiresAt)) throw expired(pairing);
    return undefined;
  }

  /** The answer of a wait that ended unclaimed: WAITING, or expired by now. */
  private stillWaiting(pairing: PairingRecord): PairingWaitResponse {
    if (this.options.clock.now().getTime() >= Date.parse(pairing.expiresAt)) {
      throw expired(pairing);
    }
    return { state: 'WAITING', expires_at: pairing.expiresAt };
  }

  /** The paired agent's broker credential, once: collecting it spends the pairing. */
  private async collect(
    secretHash: string,
    claim: NonNullable<PairingRecord['claim']>,
    now: number,
  ): Promise<PairingWaitResponse> {
    const spent = () =>
      new ApiError(
        'PAIRING_CODE_USED',
        `terminal ${claim.terminalId} collected its credential already; to pair it again, run 'tps agent pair' again`,
      );
    if (claim.collectedAt !== undefined) throw spent();
    const collectBy = Date.parse(claim.claimedAt) + this.options.settings.ttlMs;
    if (now >= collectBy) {
      throw new ApiError(
        'PAIRING_EXPIRED',
        `terminal ${claim.terminalId} was paired at ${claim.claimedAt}; its credential can no longer be collected`,
      );
    }
    const password = newSecret();
    const at = new Date(now).toISOString();
    if (!(await this.options.store.collectPairing(secretHash, hashForBroker(password), at))) {
      throw spent();
    }
    this.options.logger.info({ terminalId: claim.terminalId }, 'paired agent collected');
    return {
      state: 'PAIRED',
      terminal_id: claim.terminalId,
      name: claim.name,
      ...(claim.cohort ? { cohort: claim.cohort } : {}),
      broker: { url: this.options.brokerUrl(), username: claim.terminalId, password },
    };
  }
}

const tooMany = (what: string, retryAfterS: number) =>
  new ApiError('TOO_MANY_REQUESTS', `too many ${what}; wait ${retryAfterS} s`, {
    'retry-after': String(retryAfterS),
  });

/** The attempt taken, or 429 TOO_MANY_REQUESTS with Retry-After when its window is full. */
function taken(attempt: TakenAttempt | { retryAfterS: number }, what: string): TakenAttempt {
  if ('retryAfterS' in attempt) throw tooMany(what, attempt.retryAfterS);
  return attempt;
}

const expired = (pairing: PairingRecord) =>
  new ApiError(
    'PAIRING_EXPIRED',
    `the code expired at ${pairing.expiresAt} unclaimed; ask for a new one`,
  );
