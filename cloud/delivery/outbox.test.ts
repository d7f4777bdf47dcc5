import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ChangeNotice } from '../cluster/change-bus.js';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { CommandOutbox, type OutboxStore } from './outbox.js';

const RESEND_MS = 10_000;

interface Command {
  command_id: string;
  type: string;
}

const command = (id: string, type = 'print'): Command => ({ command_id: id, type });

/** The store's command queue, as the outbox sees it. */
class FakeStore implements OutboxStore<Command> {
  readonly pending = new Map<string, { terminalId: string; command: Command }>();
  readonly acks: Array<{ terminalId: string; commandId: string; at: string }> = [];
  failAcks = false;

  async queueCommand(terminalId: string, command: Command) {
    this.pending.set(command.command_id, { terminalId, command });
  }

  async pendingCommands() {
    return [...this.pending.values()];
  }

  async ackCommand(terminalId: string, commandId: string, at: string) {
    if (this.failAcks) throw new Error('store unreachable');
    this.acks.push({ terminalId, commandId, at });
    if (this.pending.get(commandId)?.terminalId === terminalId) this.pending.delete(commandId);
  }
}

/** Lets the publishes of the current turn happen (they are handed over a microtask later). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function setUp(
  options: {
    obsolete?: (command: Command) => Promise<boolean>;
    recordAcksAfterMs?: number;
  } = {},
) {
  const timers = new ManualTimers(Date.parse('2030-01-01T00:00:00Z'));
  const store = new FakeStore();
  const published: string[] = [];
  const remote = new Set<(change: ChangeNotice) => void>();
  let failPublish = false;
  const outbox = new CommandOutbox<Command>({
    store,
    publish: (terminalId, c) => {
      if (failPublish) throw new Error(`no route to ${terminalId}`);
      published.push(`${terminalId}:${c.command_id}`);
    },
    onRemoteChange: (listener) => {
      remote.add(listener);
      return () => remote.delete(listener);
    },
    clock: timers.clock,
    timers,
    logger: pino({ level: 'silent' }),
    resendMs: RESEND_MS,
    // Each acknowledgement written at once, unless a test is about batching them.
    recordAcksAfterMs: 0,
    ...options,
  });
  /** Moves time on, and lets what it published be handed over. */
  const advance = async (ms: number) => {
    timers.advance(ms);
    await settle();
  };
  return {
    timers,
    store,
    published,
    outbox,
    advance,
    remote: (change: ChangeNotice) => remote.forEach((listener) => listener(change)),
    listeners: () => remote.size,
    failPublish: (fail: boolean) => (failPublish = fail),
  };
}

describe('CommandOutbox', () => {
  it('publishes a command at once, then every resendMs until the terminal acknowledges it', async () => {
    const t = setUp();
    t.outbox.send('t-1', command('c-1'));
    await settle();
    expect(t.published).toEqual(['t-1:c-1']);
    await t.advance(RESEND_MS - 1);
    expect(t.published).toHaveLength(1);
    await t.advance(1);
    expect(t.published).toHaveLength(2);
    await t.advance(RESEND_MS);
    expect(t.published).toHaveLength(3);
    expect(t.outbox.awaitingAck).toBe(1);

    await t.outbox.acknowledged('t-1', 'c-1');
    expect(t.store.acks).toEqual([
      { terminalId: 't-1', commandId: 'c-1', at: new Date(t.timers.now).toISOString() },
    ]);
    expect(t.outbox.awaitingAck).toBe(0);
    await t.advance(5 * RESEND_MS);
    expect(t.published).toHaveLength(3);
    expect(t.timers.size).toBe(0);
  });

  it('runs one timer however many commands it holds, each re-sent on its own period', async () => {
    const t = setUp();
    t.outbox.send('t-1', command('c-1'));
    await t.advance(4000);
    t.outbox.send('t-2', command('c-2'));
    t.outbox.send('t-2', command('c-2')); // sent again while in hand: not published twice
    await settle();
    expect(t.timers.size).toBe(1);
    expect(t.published).toEqual(['t-1:c-1', 't-2:c-2']);
    await t.advance(6000);
    expect(t.published.slice(2)).toEqual(['t-1:c-1']);
    await t.advance(4000);
    expect(t.published.slice(3)).toEqual(['t-2:c-2']);
    expect(t.timers.size).toBe(1);
  });

  it('ignores an acknowledgement from another terminal: an agent acknowledges only what it was sent', async () => {
    const t = setUp();
    t.outbox.send('t-1', command('c-1'));
    await t.outbox.acknowledged('t-2', 'c-1');
    expect(t.store.acks).toEqual([]);
    await t.advance(RESEND_MS);
    expect(t.published).toEqual(['t-1:c-1', 't-1:c-1']);
  });

  it('records an acknowledgement of a command another relay sent (or one sent before a restart)', async () => {
    const t = setUp();
    await t.outbox.acknowledged('t-1', 'sent-elsewhere');
    expect(t.store.acks.map((a) => a.commandId)).toEqual(['sent-elsewhere']);
  });

  it('stops sending, without recording anything, when another relay recorded the acknowledgement', async () => {
    const t = setUp();
    t.outbox.send('t-1', command('c-1'));
    t.remote({ kind: 'command-acked', commandId: 'c-1' });
    t.remote({ kind: 'report', terminalId: 't-1' });
    await t.advance(3 * RESEND_MS);
    expect(t.published).toEqual(['t-1:c-1']);
    expect(t.store.acks).toEqual([]);
  });

  it('publishes again at once what waits for a terminal back online, or for all after a reconnect', async () => {
    const t = setUp();
    t.outbox.send('t-1', command('c-1'));
    t.outbox.send('t-2', command('c-2'));
    await settle();
    t.outbox.republish('t-2');
    await settle();
    expect(t.published).toEqual(['t-1:c-1', 't-2:c-2', 't-2:c-2']);
    t.outbox.republish();
    await settle();
    expect(t.published.slice(3).sort()).toEqual(['t-1:c-1', 't-2:c-2']);
  });

  it('queues a command durably before it publishes it', async () => {
    const t = setUp();
    await t.outbox.queue('t-1', command('c-1'));
    expect([...t.store.pending.keys()]).toEqual(['c-1']);
    await settle();
    expect(t.published).toEqual(['t-1:c-1']);
  });

  it('keeps a command it could not hand over, and tries again after resendMs', async () => {
    const t = setUp();
    t.failPublish(true);
    t.outbox.send('t-1', command('c-1'));
    await settle();
    t.failPublish(false);
    expect(t.published).toEqual([]);
    await t.advance(RESEND_MS);
    expect(t.published).toEqual(['t-1:c-1']);
  });

  it('leaves a command whose acknowledgement it could not record pending in the store', async () => {
    const t = setUp();
    await t.outbox.queue('t-1', command('c-1'));
    t.store.failAcks = true;
    await expect(t.outbox.acknowledged('t-1', 'c-1')).resolves.toBeUndefined();
    expect(t.outbox.awaitingAck).toBe(0);
    expect([...t.store.pending.keys()]).toEqual(['c-1']);
  });

  it('when leading, sends what the store holds unacknowledged and retires what is obsolete, now and every resendMs', async () => {
    const asked: string[] = [];
    const t = setUp({
      obsolete: async (c) => {
        asked.push(c.command_id);
        return c.type === 'done-start';
      },
    });
    await t.store.queueCommand('t-1', command('c-1', 'transaction.cancel'));
    await t.store.queueCommand('t-1', command('c-2', 'done-start'));
    t.outbox.send('t-2', command('c-3'));
    await t.store.queueCommand('t-2', command('c-3'));
    await t.outbox.lead();
    await settle();
    // c-3 is in hand already: neither looked up nor published twice.
    expect(asked).toEqual(['c-1', 'c-2']);
    expect(t.published).toEqual(['t-2:c-3', 't-1:c-1']);
    expect(t.store.acks.map((a) => a.commandId)).toEqual(['c-2']);

    // A command another relay was sending, until it died: taken up at the next sweep.
    await t.store.queueCommand('t-3', command('c-4'));
    await t.advance(RESEND_MS);
    expect(t.published.slice(2).sort()).toEqual(['t-1:c-1', 't-2:c-3', 't-3:c-4']);

    t.outbox.unlead();
    await t.store.queueCommand('t-3', command('c-5'));
    await t.advance(3 * RESEND_MS);
    expect(t.published.filter((p) => p.endsWith('c-5'))).toEqual([]);
  });

  it('does not sweep unless it leads', async () => {
    const t = setUp();
    await t.store.queueCommand('t-1', command('c-1'));
    await t.advance(3 * RESEND_MS);
    expect(t.published).toEqual([]);
  });

  it('writes acknowledgements together, recordAcksAfterMs after the first, and does not re-send them meanwhile', async () => {
    const t = setUp({ recordAcksAfterMs: 100 });
    await t.store.queueCommand('t-1', command('c-1'));
    await t.store.queueCommand('t-2', command('c-2'));
    t.outbox.send('t-1', command('c-1'));
    t.outbox.send('t-2', command('c-2'));
    await t.outbox.lead();
    await settle();
    const first = t.outbox.acknowledged('t-1', 'c-1');
    await t.advance(60);
    const second = t.outbox.acknowledged('t-2', 'c-2');
    expect(t.outbox.awaitingAck).toBe(0);
    await settle();
    expect(t.store.acks).toEqual([]);
    await t.advance(40);
    await Promise.all([first, second]);
    const at = new Date(t.timers.now).toISOString();
    expect(t.store.acks).toEqual([
      { terminalId: 't-1', commandId: 'c-1', at },
      { terminalId: 't-2', commandId: 'c-2', at },
    ]);
    // Neither the resend period nor the leader's sweep published them again.
    await t.advance(2 * RESEND_MS);
    expect(t.published.sort()).toEqual(['t-1:c-1', 't-2:c-2']);
  });

  it('leaves an acknowledgement waiting for its batch out of the sweep, and writes it on close', async () => {
    const t = setUp({ recordAcksAfterMs: 100 });
    await t.store.queueCommand('t-1', command('c-1'));
    t.outbox.send('t-1', command('c-1'));
    await settle();
    const written = t.outbox.acknowledged('t-1', 'c-1');
    await t.outbox.lead(); // sweeps now: c-1 is still pending in the store
    await settle();
    expect(t.published).toEqual(['t-1:c-1']);
    await t.outbox.close();
    await written;
    expect(t.store.acks.map((a) => a.commandId)).toEqual(['c-1']);
    expect(t.timers.size).toBe(0);
  });

  it('stops everything on close: no timer, no listener, nothing published', async () => {
    const t = setUp();
    t.outbox.send('t-1', command('c-1'));
    await t.outbox.lead();
    t.outbox.close();
    t.outbox.send('t-1', command('c-2'));
    await t.advance(3 * RESEND_MS);
    expect(t.published).toEqual(['t-1:c-1']);
    expect(t.timers.size).toBe(0);
    expect(t.listeners()).toBe(0);
  });
});
