/**
 * Rollouts of a release to a cohort in waves (docs/fleet.md, "Rollouts"). The operator
 * rolls its releases out to a cohort of a merchant account it names; the account reads
 * the rollouts that reach it (docs/tenants.md). Any relay starts, pauses and resumes them
 * and records what agents report on `update-status`; the leading relay alone moves them
 * on through their health gates (lead/unlead, started by cloud/cluster/background.ts).
 * Whoever changes a rollout
 * publishes the retained update orders of the terminals it newly ordered; the decisions
 * themselves are waves.ts's.
 */
import type { Logger } from 'pino';
import {
  ROLLOUT_DEFAULTS,
  type RolloutStartRequest,
  type RolloutView,
  type UpdateOrderMessage,
  type UpdateStatusMessage,
} from '../../protocol/index.js';
import type { Clock, Timers } from '../../common/clock.js';
import type { Principal } from '../accounts/principal.js';
import { actingFor } from '../accounts/roles.js';
import { ApiError } from '../errors.js';
import { newRolloutId } from '../ids.js';
import type { RolloutRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { advance, pause, resume, step } from './waves.js';

export interface RolloutDeps {
  store: Store;
  clock: Clock;
  timers: Timers;
  /** Publishes a terminal's retained update order; false when it could not be sent now. */
  publishOrder(terminalId: string, order: UpdateOrderMessage): boolean;
  logger: Logger;
  /** How often the leader looks at its running rollouts' gates (default 2 s). */
  checkEveryMs?: number;
}

const DEFAULT_CHECK_MS = 2000;
/** How often an operator's change is tried again when the leader moved the rollout meanwhile. */
const SAVE_ATTEMPTS = 5;

export class Rollouts {
  private leading = false;
  private timer: unknown;
  private checking: Promise<void> = Promise.resolve();

  constructor(private readonly deps: RolloutDeps) {}

  /** The operator's: a rollout of one of its releases to a cohort of the account it names. */
  async start(principal: Principal, request: RolloutStartRequest): Promise<RolloutView> {
    managing(principal);
    const { store, clock } = this.deps;
    const { accountId } = await actingFor(
      principal,
      request.account_id,
      async (id) => (await store.getAccount(id))?.kind === 'merchant',
    );
    const arch = request.arch ?? 'linux-x64';
    // Releases are the operator's, kept under its own account (docs/fleet.md, "Releases").
    if (!(await store.findRelease(principal.accountId, request.version, arch))) {
      throw new ApiError(
        'RELEASE_NOT_FOUND',
        `no release ${request.version} for ${arch}: publish it first (tps fleet release publish)`,
      );
    }
    const cohort = await store.cohortTerminals(accountId, request.cohort);
    if (cohort.length === 0) {
      throw new ApiError(
        'COHORT_NOT_FOUND',
        `no terminal of account ${accountId} is in ${request.cohort}`,
      );
    }
    const now = clock.now();
    const at = now.toISOString();
    const created = advance(
      {
        id: newRolloutId(),
        accountId,
        cohort: request.cohort,
        version: request.version,
        arch,
        sharePercent: request.share_percent ?? ROLLOUT_DEFAULTS.sharePercent,
        maxFailurePercent: request.max_failure_percent ?? ROLLOUT_DEFAULTS.maxFailurePercent,
        deadlineS: request.deadline_s ?? ROLLOUT_DEFAULTS.deadlineS,
        state: 'running',
        wave: 0,
        waveStartedAt: at,
        createdAt: at,
        updatedAt: at,
        revision: 0,
        terminals: [],
      },
      cohort,
      now,
    );
    await store.createRollout(created);
    this.deps.logger.info(
      {
        rollout: created.id,
        account: created.accountId,
        version: created.version,
        cohort: created.cohort,
      },
      'rollout started',
    );
    this.publishNew(undefined, created);
    return rolloutView(created);
  }

  /**
   * Newest first: the operator's of every account, or of the one it names; a merchant
   * account's of its own (naming another is as naming one that does not exist).
   */
  async list(principal: Principal, accountId?: string): Promise<RolloutView[]> {
    reading(principal);
    const namesAnother =
      principal.role !== 'operator' && accountId !== undefined && accountId !== principal.accountId;
    if (namesAnother) {
      throw new ApiError('NOT_FOUND', `no account ${accountId}`);
    }
    const reaching = principal.role === 'operator' ? accountId : principal.accountId;
    const rollouts = await this.deps.store.listRollouts(
      reaching === undefined ? {} : { accountId: reaching },
    );
    return rollouts.map(rolloutView);
  }

  async get(principal: Principal, id: string): Promise<RolloutView> {
    return rolloutView(await this.find(principal, id));
  }

  async pause(principal: Principal, id: string): Promise<RolloutView> {
    managing(principal);
    return this.change(principal, id, 'running', (rollout) =>
      pause(rollout, this.deps.clock.now()),
    );
  }

  async resume(principal: Principal, id: string): Promise<RolloutView> {
    managing(principal);
    return this.change(principal, id, 'paused', async (rollout) =>
      resume(
        rollout,
        await this.deps.store.cohortTerminals(rollout.accountId, rollout.cohort),
        this.deps.clock.now(),
      ),
    );
  }

  /**
   * An agent's `update-status`, kept as what it last said of its updates (the fleet facts
   * show its last outcome); how its last order ended is also kept with the rollout if a
   * rollout gave that order to that terminal (the topic names the terminal, and the broker
   * lets an agent publish on its own topics only). The leader's next check reads it.
   */
  async statusReported(terminalId: string, status: UpdateStatusMessage): Promise<void> {
    await this.deps.store.putFleetReport({
      terminalId,
      kind: 'update',
      body: status,
      receivedAt: this.deps.clock.now().toISOString(),
    });
    const last = status.last;
    if (!last) return;
    const recorded = await this.deps.store.recordRolloutOutcome(last.order_id, terminalId, {
      result: last.result,
      ...(last.reason !== undefined ? { reason: last.reason } : {}),
      at: last.at,
    });
    if (recorded && this.leading) this.checkSoon(0);
  }

  /** Taking the lead: the orders are published again (a broker may have lost them), then checked. */
  async lead(): Promise<void> {
    this.leading = true;
    await this.republish();
    this.checkSoon(0);
  }

  unlead(): void {
    this.leading = false;
    this.deps.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Every terminal's latest order again; retained, so sending one twice changes nothing. */
  async republish(): Promise<void> {
    if (!this.leading) return;
    const orders = new Map<string, UpdateOrderMessage>();
    const rollouts = await this.deps.store.listRollouts({});
    // Oldest first: a terminal ordered by several rollouts keeps the newest's order.
    for (const rollout of rollouts.reverse()) {
      for (const t of rollout.terminals) {
        orders.set(t.terminalId, { order_id: rollout.id, version: rollout.version });
      }
    }
    for (const [terminalId, order] of orders) this.deps.publishOrder(terminalId, order);
  }

  /** The leader's look at every running rollout's gate; resolves when done (tests wait for it). */
  check(): Promise<void> {
    this.checking = this.checking.then(
      () => this.checkRunning(),
      () => this.checkRunning(),
    );
    return this.checking;
  }

  private async checkRunning(): Promise<void> {
    const { store, clock, logger } = this.deps;
    try {
      for (const rollout of await store.listRollouts({ state: 'running' })) {
        const cohort = await store.cohortTerminals(rollout.accountId, rollout.cohort);
        const next = step(rollout, cohort, clock.now());
        if (!next) continue;
        if (!(await this.save(rollout, next))) continue;
        if (next.state === 'paused') {
          logger.warn(
            { rollout: next.id, reason: next.pausedReason },
            'rollout paused by its gate',
          );
        } else {
          logger.info({ rollout: next.id, state: next.state, wave: next.wave }, 'rollout moved on');
        }
      }
    } catch (error) {
      logger.error({ err: error }, 'rollouts could not be checked; trying again');
    } finally {
      if (this.leading) this.checkSoon(this.deps.checkEveryMs ?? DEFAULT_CHECK_MS);
    }
  }

  private checkSoon(ms: number): void {
    this.deps.timers.clearTimeout(this.timer);
    this.timer = this.deps.timers.setTimeout(
      () => {
        this.timer = undefined;
        void this.check();
      },
      ms,
      { unref: true },
    );
  }

  private async find(principal: Principal, id: string): Promise<RolloutRecord> {
    reading(principal);
    const rollout = await this.deps.store.getRollout(id);
    // To a merchant, another account's rollout is one that does not exist.
    const reaches = principal.role === 'operator' || rollout?.accountId === principal.accountId;
    if (!rollout || !reaches) {
      throw new ApiError('ROLLOUT_NOT_FOUND', `no rollout ${id}`);
    }
    return rollout;
  }

  private async change(
    principal: Principal,
    id: string,
    from: RolloutRecord['state'],
    decide: (rollout: RolloutRecord) => RolloutRecord | Promise<RolloutRecord>,
  ): Promise<RolloutView> {
    for (let attempt = 0; attempt < SAVE_ATTEMPTS; attempt++) {
      const rollout = await this.find(principal, id);
      if (rollout.state !== from) {
        throw new ApiError(
          'ROLLOUT_STATE_CONFLICT',
          `rollout ${id} is ${rollout.state}; only a ${from} one can be ${from === 'running' ? 'paused' : 'resumed'}`,
        );
      }
      const next = await decide(rollout);
      if (await this.save(rollout, next)) {
        this.deps.logger.info(
          { rollout: id, state: next.state, wave: next.wave },
          'rollout changed by an operator',
        );
        if (this.leading) this.checkSoon(0);
        return rolloutView({ ...next, revision: rollout.revision + 1 });
      }
    }
    throw new ApiError(
      'ROLLOUT_STATE_CONFLICT',
      `rollout ${id} kept changing meanwhile; look again`,
    );
  }

  /** Writes `next` if nobody changed `before` meanwhile, then publishes its new orders. */
  private async save(before: RolloutRecord, next: RolloutRecord): Promise<boolean> {
    const saved = await this.deps.store.updateRollout(
      { ...next, revision: before.revision + 1 },
      before.revision,
    );
    if (saved) this.publishNew(before, next);
    return saved;
  }

  private publishNew(before: RolloutRecord | undefined, next: RolloutRecord): void {
    const known = new Set(before?.terminals.map((t) => t.terminalId));
    for (const t of next.terminals) {
      if (known.has(t.terminalId)) continue;
      // Not sent now (the link is down): the leader sends every order again on reconnect.
      this.deps.publishOrder(t.terminalId, { order_id: next.id, version: next.version });
    }
  }
}

/**
 * Refuses (403) all but the operator, who alone starts, pauses and resumes rollouts
 * (docs/tenants.md, "Who may do what"). The routes ask before they read a body.
 */
export function managing(principal: Principal): void {
  if (principal.role !== 'operator') {
    throw new ApiError(
      'FORBIDDEN',
      "rollouts are the operator's: only an operator credential starts, pauses or resumes one",
    );
  }
}

/** Refuses (403) a terminal credential: the operator reads every rollout, a merchant its own. */
export function reading(principal: Principal): void {
  if (principal.role === 'terminal') {
    throw new ApiError(
      'FORBIDDEN',
      "a terminal credential reads no rollout: they are the operator's, and an account credential reads those that reach its terminals",
    );
  }
}

export function rolloutView(r: RolloutRecord): RolloutView {
  return {
    id: r.id,
    account_id: r.accountId,
    version: r.version,
    cohort: r.cohort,
    arch: r.arch as RolloutView['arch'],
    share_percent: r.sharePercent,
    max_failure_percent: r.maxFailurePercent,
    deadline_s: r.deadlineS,
    state: r.state,
    wave: r.wave,
    wave_started_at: r.waveStartedAt,
    ...(r.pausedReason !== undefined ? { paused_reason: r.pausedReason } : {}),
    ...(r.supersededBy !== undefined ? { superseded_by: r.supersededBy } : {}),
    created_at: r.createdAt,
    updated_at: r.updatedAt,
    terminals: r.terminals.map((t) => ({
      terminal_id: t.terminalId,
      wave: t.wave,
      ordered_at: t.orderedAt,
      ...(t.result !== undefined ? { result: t.result } : {}),
      ...(t.reason !== undefined ? { reason: t.reason } : {}),
      ...(t.reportedAt !== undefined ? { reported_at: t.reportedAt } : {}),
    })),
  };
}
