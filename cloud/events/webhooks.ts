/**
 * Webhooks: an account registers an endpoint and a filter; each matching event is
 * delivered as a signed CloudEvent, one at a time and in log order (so in order per
 * subject), retried with capped, jittered exponential back-off until the receiver
 * answers 2xx. Events stay in the log until delivered. A receiver that fails for longer
 * than `disableAfterMs` is disabled, with the reason shown to its owner.
 */
import type * as Undici from 'undici';
import type { Logger } from 'pino';
import type { WebhookCreateRequest, WebhookView } from '../../protocol/index.js';
import { Backoff } from '../../common/backoff.js';
import { systemTimers, type Clock, type Timers } from '../../common/clock.js';
import type { ChangeBus } from '../cluster/change-bus.js';
import { ApiError } from '../errors.js';
import { cohortOf, newWebhookId } from '../ids.js';
import type { EventQuery, WebhookRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { Principal } from '../accounts/principal.js';
import type { EventFeed } from './event-feed.js';
import type { EventLog } from './event-list.js';
import { webhookMessage } from './webhook-message.js';
import { newWebhookSecret } from './webhook-secret.js';
import { RefusedAddress, TargetPolicy, type Network } from './webhook-target.js';

let undici: Promise<typeof Undici> | undefined;
const loadUndici = () => (undici ??= import('undici'));

export interface WebhookSettings {
  /** Plain http:// endpoints, for development only. */
  allowHttp: boolean;
  /**
   * Networks deliveries may reach besides public unicast addresses (webhook-target.ts):
   * a receiver inside the operator's own network, or on loopback in development.
   */
  allowNetworks: readonly Network[];
  /** Webhooks one credential may hold; beyond, create answers TOO_MANY_WEBHOOKS. */
  maxPerCredential: number;
  /**
   * Webhooks one account may hold, its terminals' included: each terminal credential
   * counts its own, so without this an account would multiply them by its terminals.
   */
  maxPerAccount: number;
  retryBaseMs: number;
  retryCapMs: number;
  disableAfterMs: number;
  timeoutMs: number;
}

export interface WebhookOptions {
  store: Store;
  /** Tells the leading relay of receivers created, deleted or re-enabled elsewhere. */
  bus: ChangeBus;
  feed: EventFeed;
  log: EventLog;
  clock: Clock;
  /** The back-off's timers (default: the system's). */
  timers?: Timers;
  /** The back-off's jitter, uniform in [0, 1) (default Math.random). */
  random?: () => number;
  logger: Logger;
  settings: WebhookSettings;
}

/** The reason a receiver shows when its owner disabled it. */
export const DISABLED_BY_OWNER = 'disabled by its owner';

/** Events read ahead per store query. */
const PAGE = 100;

export class Webhooks {
  private readonly deliverers = new Map<string, Deliverer>();
  readonly policy: TargetPolicy;
  /** The deliveries' connections, made through the policy's lookup; open while leading. */
  private dispatcher: Promise<Undici.Agent> | undefined;

  constructor(private readonly options: WebhookOptions) {
    this.policy = new TargetPolicy(options.settings.allowNetworks);
  }

  /** The connection pool deliveries use: every connection's address passes the policy. */
  agent(): Promise<Undici.Agent> {
    return (this.dispatcher ??= loadUndici().then(
      ({ Agent }) => new Agent({ connect: { lookup: this.policy.lookup } }),
    ));
  }

  /** Deliveries run only in the leading relay: one deliverer per receiver across relays. */
  private leading = false;

  async start(): Promise<void> {
    this.leading = true;
    await this.reconcile();
  }

  async stop(): Promise<void> {
    this.leading = false;
    await Promise.all([...this.deliverers.values()].map((d) => d.stop()));
    this.deliverers.clear();
    const dispatcher = this.dispatcher;
    this.dispatcher = undefined;
    await (await dispatcher)?.close();
  }

  /**
   * Brings the deliverers in line with the stored receivers, after another relay created,
   * deleted or re-enabled one, or an account was disabled or enabled: a disabled account's
   * receivers get nothing until it is enabled, then what waited, from where they stopped.
   */
  async reconcile(): Promise<void> {
    if (!this.leading) return;
    const { store } = this.options;
    const disabled = new Set(
      (await store.listAccounts()).filter((a) => a.disabledAt).map((a) => a.id),
    );
    const enabled = new Set(
      (await store.listWebhooks())
        .filter((h) => h.enabled && !disabled.has(h.accountId))
        .map((h) => h.id),
    );
    for (const [id, deliverer] of this.deliverers) {
      if (!enabled.has(id)) {
        this.deliverers.delete(id);
        await deliverer.stop();
      }
    }
    for (const id of enabled) this.run(id);
  }

  async create(principal: Principal, request: WebhookCreateRequest) {
    const url = new URL(request.url);
    if (url.protocol !== 'https:' && !this.options.settings.allowHttp) {
      throw new ApiError('INVALID_REQUEST', 'url: must be an https:// address');
    }
    if (this.policy.refusesLiteralHost(url)) {
      throw new ApiError('INVALID_REQUEST', 'url: must name a public address');
    }
    await this.options.log.scope(principal, request.filter);
    const { maxPerCredential, maxPerAccount } = this.options.settings;
    const ofAccount = await this.options.store.listWebhooks(principal.accountId);
    if (ofAccount.filter((h) => h.terminalId === principal.terminalId).length >= maxPerCredential) {
      throw new ApiError(
        'TOO_MANY_WEBHOOKS',
        `this credential has ${maxPerCredential} webhooks, as many as allowed; delete one first`,
      );
    }
    if (ofAccount.length >= maxPerAccount) {
      throw new ApiError(
        'TOO_MANY_WEBHOOKS',
        `this account has ${maxPerAccount} webhooks, its terminals' included, as many as allowed; delete one first`,
      );
    }
    const { latest } = await this.options.store.eventBounds();
    const hook: WebhookRecord = {
      id: newWebhookId(),
      accountId: principal.accountId,
      ...(principal.terminalId ? { terminalId: principal.terminalId } : {}),
      url: request.url,
      filter: request.filter ?? {},
      mode: request.mode ?? 'structured',
      secret: newWebhookSecret(),
      enabled: true,
      // A new receiver gets what happens from now on.
      cursor: latest,
      createdAt: this.options.clock.now().toISOString(),
    };
    await this.options.store.createWebhook(hook);
    await this.started(hook.id);
    return { webhook: { ...(await this.view(hook)), secret: hook.secret } };
  }

  async list(principal: Principal) {
    const hooks = await this.options.store.listWebhooks(principal.accountId);
    const visible = hooks.filter(
      (h) => principal.terminalId === undefined || h.terminalId === principal.terminalId,
    );
    return { webhooks: await Promise.all(visible.map((h) => this.view(h))) };
  }

  async delete(principal: Principal, id: string) {
    const hook = await this.owned(principal, id);
    await this.deliverers.get(id)?.stop();
    this.deliverers.delete(id);
    await this.options.store.deleteWebhook(id);
    if (!this.leading) await this.options.bus.announce({ kind: 'webhooks' });
    return { webhook: { ...(await this.view(hook)), enabled: false } };
  }

  /** Re-enables a disabled receiver; it resumes where it stopped. */
  async enable(principal: Principal, id: string) {
    await this.owned(principal, id);
    await this.options.store.updateWebhook(id, {
      enabled: true,
      disabledReason: undefined,
      failingSince: undefined,
    });
    await this.started(id);
    return { webhook: await this.view((await this.options.store.getWebhook(id))!) };
  }

  /** Stops deliveries to a receiver, keeping it and its place; enable resumes there. */
  async disable(principal: Principal, id: string) {
    await this.owned(principal, id);
    await this.options.store.updateWebhook(id, {
      enabled: false,
      disabledReason: DISABLED_BY_OWNER,
    });
    await this.deliverers.get(id)?.stop();
    this.deliverers.delete(id);
    if (!this.leading) await this.options.bus.announce({ kind: 'webhooks' });
    return { webhook: await this.view((await this.options.store.getWebhook(id))!) };
  }

  /** The lowest position some enabled receiver still needs; retention keeps it. */
  async oldestNeeded(): Promise<number> {
    const cursors = (await this.options.store.listWebhooks())
      .filter((h) => h.enabled)
      .map((h) => h.cursor + 1);
    return cursors.length > 0 ? Math.min(...cursors) : Number.MAX_SAFE_INTEGER;
  }

  private async owned(principal: Principal, id: string): Promise<WebhookRecord> {
    const hook = await this.options.store.getWebhook(id);
    if (
      !hook ||
      hook.accountId !== principal.accountId ||
      (principal.terminalId !== undefined && hook.terminalId !== principal.terminalId)
    ) {
      throw new ApiError('WEBHOOK_NOT_FOUND', `no webhook ${id}`);
    }
    return hook;
  }

  private async view(hook: WebhookRecord): Promise<WebhookView> {
    const { limit: _limit, ...query } = this.query(hook);
    return {
      id: hook.id,
      url: hook.url,
      filter: hook.filter,
      mode: hook.mode,
      enabled: hook.enabled,
      created_at: hook.createdAt,
      ...(hook.disabledReason ? { disabled_reason: hook.disabledReason } : {}),
      ...(hook.failingSince ? { failing_since: hook.failingSince } : {}),
      ...(hook.lastError ? { last_error: hook.lastError } : {}),
      backlog: await this.options.store.countEvents(query),
    };
  }

  query(hook: WebhookRecord): EventQuery {
    const subject = hook.filter.subject?.eq;
    const type = hook.filter.type?.eq;
    return {
      accountId: hook.accountId,
      after: hook.cursor,
      limit: 1,
      ...(hook.terminalId
        ? { subject: hook.terminalId }
        : subject && subject !== cohortOf(hook.accountId)
          ? { subject }
          : {}),
      ...(type ? { kind: this.options.log.kindOf(type) } : {}),
    };
  }

  /** Delivers to a receiver from now on: here when leading, else in the leading relay. */
  private async started(id: string): Promise<void> {
    if (this.leading) this.run(id);
    else await this.options.bus.announce({ kind: 'webhooks' });
  }

  private run(id: string): void {
    if (!this.leading || this.deliverers.has(id)) return;
    const deliverer = new Deliverer(id, this, this.options);
    this.deliverers.set(id, deliverer);
    void deliverer.loop().finally(() => {
      if (this.deliverers.get(id) === deliverer) this.deliverers.delete(id);
    });
  }
}

/** Delivers one receiver's events, one at a time. */
class Deliverer {
  private stopped = false;
  private wake: (() => void) | undefined;
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly id: string,
    private readonly hooks: Webhooks,
    private readonly options: WebhookOptions,
  ) {}

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.done;
  }

  loop(): Promise<void> {
    this.done = this.deliverAll().catch((error: unknown) => {
      this.options.logger.error({ err: error, webhook: this.id }, 'webhook delivery stopped');
    });
    return this.done;
  }

  /**
   * Delivers in log order, reading ahead in pages. The position reached is kept in memory
   * and saved behind the deliveries (one save at a time, always the newest), so a receiver
   * is not held to one store commit per event; after a crash, deliveries resume from the
   * last saved position: at least once, as receivers are told.
   */
  private async deliverAll(): Promise<void> {
    const { store, clock, settings } = this.options;
    let hook = await store.getWebhook(this.id);
    if (!hook?.enabled) return;
    let cursor = hook.cursor;
    let failingSince = hook.failingSince;
    const backoff = new Backoff({
      initialMs: settings.retryBaseMs,
      maxMs: settings.retryCapMs,
      ...(this.options.random ? { random: this.options.random } : {}),
    });
    try {
      while (!this.stopped) {
        const query = { ...this.hooks.query(hook), after: cursor, limit: PAGE };
        const events = query.kind === null ? [] : await store.readEvents(query);
        if (events.length === 0) {
          await this.pause(Number.POSITIVE_INFINITY, query);
          continue;
        }
        for (const event of events) {
          const error = await this.deliver(hook, this.options.log.render(event, 'v1'));
          if (this.stopped) return;
          if (error === undefined) {
            backoff.reset();
            failingSince = undefined;
            cursor = event.position;
            this.saveCursor(cursor);
            continue;
          }
          await this.savedCursor();
          const now = clock.now();
          failingSince ??= now.toISOString();
          if (now.getTime() - Date.parse(failingSince) >= settings.disableAfterMs) {
            await store.updateWebhook(this.id, {
              enabled: false,
              failingSince,
              lastError: error,
              disabledReason: `disabled after failing since ${failingSince}; last error: ${error}`,
            });
            this.options.logger.warn({ webhook: this.id, error }, 'webhook disabled');
            return;
          }
          await store.updateWebhook(this.id, { failingSince, lastError: error });
          await this.pause(backoff.next());
          hook = (await store.getWebhook(this.id)) ?? hook;
          break;
        }
      }
    } finally {
      await this.savedCursor();
    }
  }

  private cursorToSave: number | undefined;
  private saving: Promise<void> | undefined;

  /** Saves the position reached (and clears a failure) behind the deliveries. */
  private saveCursor(cursor: number): void {
    this.cursorToSave = cursor;
    this.saving ??= (async () => {
      while (this.cursorToSave !== undefined) {
        const next = this.cursorToSave;
        this.cursorToSave = undefined;
        await this.options.store.updateWebhook(this.id, {
          cursor: next,
          failingSince: undefined,
          lastError: undefined,
        });
      }
    })().finally(() => (this.saving = undefined));
  }

  private async savedCursor(): Promise<void> {
    while (this.saving) await this.saving;
  }

  /** Waits for the back-off, or (with no end) for a matching event; stop ends either. */
  private pause(ms: number, query?: EventQuery): Promise<void> {
    return new Promise((resolve) => {
      const unsubscribe = query
        ? this.options.feed.subscribe(query.accountId, (notice) => {
            if (
              !notice ||
              ((query.subject === undefined || notice.subject === query.subject) &&
                (query.kind === undefined || notice.kind === query.kind))
            ) {
              finish();
            }
          })
        : () => {};
      const timers = this.options.timers ?? systemTimers;
      const timer = Number.isFinite(ms) ? timers.setTimeout(() => finish(), ms) : undefined;
      const finish = () => {
        timers.clearTimeout(timer);
        unsubscribe();
        this.wake = undefined;
        resolve();
      };
      this.wake = finish;
      // An event may have been committed between the caller's read and the subscription.
      if (query) {
        void this.options.store.readEvents(query).then(
          (events) => events.length > 0 && finish(),
          () => finish(),
        );
      }
    });
  }

  /** Answers undefined on success, else what went wrong. */
  private async deliver(
    hook: WebhookRecord,
    event: ReturnType<EventLog['render']>,
  ): Promise<string | undefined> {
    const timestamp = Math.floor(this.options.clock.now().getTime() / 1000);
    const { headers, body } = webhookMessage(hook, event, timestamp);
    try {
      // A literal address never reaches the lookup: net.connect uses it as it is.
      if (this.hooks.policy.refusesLiteralHost(new URL(hook.url))) {
        throw new RefusedAddress(new URL(hook.url).hostname);
      }
      const { fetch } = await loadUndici();
      const response = await fetch(hook.url, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(this.options.settings.timeoutMs),
        redirect: 'manual',
        dispatcher: await this.hooks.agent(),
      });
      await response.body?.cancel();
      // The status class only: the receiver's own words stay with the receiver.
      return response.ok ? undefined : `HTTP ${Math.floor(response.status / 100)}xx`;
    } catch (error) {
      const category = failureCategory(error);
      this.options.logger.debug({ err: error, webhook: hook.id, category }, 'delivery failed');
      return category;
    }
  }
}

/**
 * What a failed delivery tells the webhook's owner: a category, never the text of an
 * error, which could carry what a host inside the relay's network answered.
 */
export type DeliveryFailure = 'refused address' | 'timeout' | 'connection failed';

function failureCategory(error: unknown): DeliveryFailure {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; depth++) {
    if (cause instanceof RefusedAddress) return 'refused address';
    const code = (cause as { code?: unknown }).code;
    if (
      cause.name === 'TimeoutError' ||
      code === 'UND_ERR_CONNECT_TIMEOUT' ||
      code === 'UND_ERR_HEADERS_TIMEOUT' ||
      code === 'UND_ERR_BODY_TIMEOUT'
    ) {
      return 'timeout';
    }
    cause = cause.cause;
  }
  return 'connection failed';
}
