/**
 * The command outbox: every command for a terminal is queued durably (in the store, with
 * the change that made it or on its own), published, published again until the terminal
 * acknowledges it, and then marked delivered, here and nowhere else. It knows nothing of
 * how commands travel (`publish`) nor what they mean (`obsolete`), so payment commands and
 * fleet commands ride on it alike.
 *
 *   queue ─▶ store ─▶ send ─▶ in hand ──publish──▶ terminal
 *                                │  ▲                    │ ack, through any relay
 *                                │  └─ again every resendMs, when the terminal is
 *                                │     reachable again, when the transport reconnects
 *                                ▼                        │
 *                        acknowledged ◀───────────────────┘ ─▶ store: delivered
 *
 * One timer serves the whole outbox: it fires for whichever command falls due first, and,
 * in the leading relay, for the sweep of the store for commands no relay is sending any
 * more (after a restart, or another relay's death).
 *
 * With several relays on one store, an acknowledgement may reach a relay that did not send
 * the command: that relay records it, and the sender stops on hearing of it
 * (`onRemoteChange`).
 *
 * Acknowledgements are written together, `recordAcksAfterMs` after the first of a batch,
 * so that they ride in one commit, usually with the reports that followed them, instead
 * of each costing a commit of its own. Nothing depends on one being durable at once: an
 * acknowledgement lost with the process only makes the command be sent again after the
 * restart, and the agent applies a command once however often it comes (invariant 5).
 */
import type { Logger } from 'pino';
import { systemTimers, type Clock, type Timers } from '../../common/clock.js';
import type { ChangeBus } from '../cluster/change-bus.js';

/** Anything with an id, for a terminal: a payment command, a fleet command. */
export interface OutboxCommand {
  command_id: string;
}

/** What the outbox needs of the store: its queue of unacknowledged commands. */
export interface OutboxStore<C extends OutboxCommand> {
  /** Queues a command that belongs to no transaction's commit. */
  queueCommand(terminalId: string, command: C): Promise<void>;
  /** Commands not yet acknowledged, oldest first. */
  pendingCommands(): Promise<Array<{ terminalId: string; command: C }>>;
  /** Marks the terminal's command delivered (a command of another terminal is left alone). */
  ackCommand(terminalId: string, commandId: string, at: string): Promise<void>;
}

export interface CommandOutboxOptions<C extends OutboxCommand> {
  store: OutboxStore<C>;
  /**
   * Hands a command to whatever carries it, once. A failure (no route to the terminal) is
   * logged and the command published again later, as one lost on the way would be.
   */
  publish: (terminalId: string, command: C) => Promise<void> | void;
  /**
   * Whether an unacknowledged command found in the store (after a restart, or another
   * relay's death) no longer needs sending: it is then marked delivered instead.
   */
  obsolete?: (command: C) => Promise<boolean>;
  onRemoteChange: ChangeBus['subscribe'];
  clock: Clock;
  logger: Logger;
  timers?: Timers;
  /** A command not acknowledged this long after it was published is published again. */
  resendMs?: number;
  /** Acknowledgements wait this long to be written together (default 100 ms; 0: each at once). */
  recordAcksAfterMs?: number;
}

interface InHand<C> {
  terminalId: string;
  command: C;
  /** When it is published again, if still unacknowledged (clock milliseconds). */
  dueAt: number;
}

export class CommandOutbox<C extends OutboxCommand> {
  /** Commands published and not yet acknowledged, by id, in the order they fall due. */
  private readonly inHand = new Map<string, InHand<C>>();
  private readonly timers: Timers;
  private readonly resendMs: number;
  private timer: unknown;
  private timerAt = Infinity;
  /** When the leader sweeps the store next; undefined when this relay does not lead. */
  private nextSweepAt: number | undefined;
  private sweeping = false;
  private closed = false;
  private readonly unwatch: () => void;
  private readonly recordAcksAfterMs: number;
  /** Acknowledged, not yet written: terminal by command id. The sweep leaves them alone. */
  private readonly unrecorded = new Map<string, string>();
  /** The batch of acknowledgements waiting to be written, and when it is. */
  private ackBatch: { timer: unknown; written: Promise<void>; write: () => void } | undefined;

  constructor(private readonly options: CommandOutboxOptions<C>) {
    this.timers = options.timers ?? systemTimers;
    this.resendMs = options.resendMs ?? 10_000;
    this.recordAcksAfterMs = options.recordAcksAfterMs ?? 100;
    this.unwatch = options.onRemoteChange((change) => {
      // Another relay recorded the acknowledgement of a command sent from here.
      if (change.kind === 'command-acked') this.inHand.delete(change.commandId);
    });
  }

  /** Commands sent and not yet acknowledged (for metrics). */
  get awaitingAck(): number {
    return this.inHand.size;
  }

  /** Queues a command durably, then sends it: for commands outside a transaction's commit. */
  async queue(terminalId: string, command: C): Promise<void> {
    await this.options.store.queueCommand(terminalId, command);
    this.send(terminalId, command);
  }

  /**
   * Sends a command already queued durably (in the commit of the change that made it):
   * published now, and again until the terminal acknowledges it.
   */
  send(terminalId: string, command: C): void {
    if (this.closed || this.inHand.has(command.command_id)) return;
    this.publish({ terminalId, command, dueAt: 0 });
  }

  /**
   * The terminal acknowledged a command, through whichever relay: it is marked delivered,
   * with the batch it joins. An agent acknowledges only what was sent to it, so an
   * acknowledgement from another terminal is ignored. Resolves once written; never
   * rejects: a failed write leaves the command for the sweep.
   */
  async acknowledged(terminalId: string, commandId: string): Promise<void> {
    const held = this.inHand.get(commandId);
    if (held && held.terminalId !== terminalId) return;
    this.inHand.delete(commandId);
    if (this.recordAcksAfterMs === 0 || this.closed) {
      await this.markDelivered(terminalId, commandId);
      return;
    }
    this.unrecorded.set(commandId, terminalId);
    await this.batchAck();
  }

  private batchAck(): Promise<void> {
    if (!this.ackBatch) {
      let write!: () => void;
      const written = new Promise<void>((resolve) => {
        write = () => resolve(this.recordAcks());
      });
      const timer = this.timers.setTimeout(() => write(), this.recordAcksAfterMs, {
        unref: true,
      });
      this.ackBatch = { timer, written, write };
    }
    return this.ackBatch.written;
  }

  /** Writes the batch: the writes of one turn share a commit (docs/architecture.md). */
  private async recordAcks(): Promise<void> {
    this.ackBatch = undefined;
    await Promise.all(
      [...this.unrecorded].map(async ([commandId, terminalId]) => {
        await this.markDelivered(terminalId, commandId);
        this.unrecorded.delete(commandId);
      }),
    );
  }

  /**
   * Publishes again now what waits for one terminal (it came back online) or, without
   * one, for all (the transport reconnected: the broker may have lost its queue).
   */
  republish(terminalId?: string): void {
    for (const held of [...this.inHand.values()]) {
      if (terminalId === undefined || held.terminalId === terminalId) this.publish(held);
    }
  }

  /**
   * This relay leads: it sends what the store holds unacknowledged and no relay may be
   * sending any more, now and every `resendMs`.
   */
  async lead(): Promise<void> {
    if (this.closed) return;
    this.nextSweepAt = this.now() + this.resendMs;
    await this.sweep();
    this.arm();
  }

  unlead(): void {
    this.nextSweepAt = undefined;
  }

  /**
   * Stops publishing; what is in hand stays queued in the store for the next start.
   * Resolves once the acknowledgements waiting for their batch are written.
   */
  close(): Promise<void> {
    this.closed = true;
    this.nextSweepAt = undefined;
    this.unwatch();
    this.timers.clearTimeout(this.timer);
    this.timer = undefined;
    this.inHand.clear();
    const batch = this.ackBatch;
    if (!batch) return Promise.resolve();
    this.timers.clearTimeout(batch.timer);
    batch.write();
    return batch.written;
  }

  private now(): number {
    return this.options.clock.now().getTime();
  }

  /** Publishes and sets the next re-send; the command goes last, with the latest due time. */
  private publish(held: InHand<C>): void {
    const { terminalId, command } = held;
    held.dueAt = this.now() + this.resendMs;
    this.inHand.delete(command.command_id);
    this.inHand.set(command.command_id, held);
    this.arm();
    Promise.resolve()
      .then(() => this.options.publish(terminalId, command))
      .catch((error: unknown) => {
        this.options.logger.warn({ err: error, terminalId }, 'command not delivered');
      });
  }

  /** Sets the one timer for what falls due first: a re-send, or the leader's sweep. */
  private arm(): void {
    if (this.closed) return;
    const first = this.inHand.values().next().value;
    const at = Math.min(first?.dueAt ?? Infinity, this.nextSweepAt ?? Infinity);
    if (at >= this.timerAt) return;
    this.timers.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.timers.setTimeout(() => this.tick(), Math.max(at - this.now(), 0), {
      unref: true,
    });
  }

  private tick(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.now();
    for (const held of [...this.inHand.values()]) {
      if (held.dueAt > now) break;
      this.publish(held);
    }
    if (this.nextSweepAt !== undefined && this.nextSweepAt <= now) {
      this.nextSweepAt = now + this.resendMs;
      void this.sweep();
    }
    this.arm();
  }

  /** Takes in hand what the store holds unacknowledged, or retires what is obsolete. */
  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      for (const { terminalId, command } of await this.options.store.pendingCommands()) {
        if (this.closed) return;
        const id = command.command_id;
        if (this.inHand.has(id) || this.unrecorded.has(id)) continue;
        if (await this.options.obsolete?.(command)) {
          await this.markDelivered(terminalId, command.command_id);
        } else {
          this.send(terminalId, command);
        }
      }
    } catch (error) {
      this.options.logger.error({ err: error }, 're-sending pending commands failed');
    } finally {
      this.sweeping = false;
    }
  }

  /** The one place a command is marked delivered. */
  private async markDelivered(terminalId: string, commandId: string): Promise<void> {
    try {
      await this.options.store.ackCommand(
        terminalId,
        commandId,
        this.options.clock.now().toISOString(),
      );
    } catch (error) {
      // Still pending in the store: the leader's sweep sends it again, the terminal acks again.
      this.options.logger.warn(
        { err: error, terminalId, commandId },
        'acknowledgement not recorded',
      );
    }
  }
}
