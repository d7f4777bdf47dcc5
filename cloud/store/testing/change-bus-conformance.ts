/**
 * The behaviour every change bus between relays must show, as one suite that each
 * implementation's test file runs with its own factory (PostgreSQL:
 * ../postgres/change-bus.test.ts): what a relay's subscriber sees of another relay's
 * commits and announcements, and never of its own relay's; a `resync` nudge whenever it
 * starts listening, again after its connection dropped; a notice too large to send whole.
 * The embedded bus, of a relay alone on its store, hears nothing at all
 * (cluster/embedded.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { ChangeBus, ChangeNotice } from '../../cluster/change-bus.js';
import type { Store } from '../store.js';
import { NOW, terminalRecord } from './store-fixtures.js';
import { until } from './until.js';

/** One relay's view: its store and its bus. */
export interface BusRelay {
  store: Store;
  bus: ChangeBus;
  /** Closes the bus and the store. */
  close(): Promise<void>;
}

export interface ChangeBusFactory {
  /** A relay on a fresh, empty store. */
  open(): Promise<BusRelay>;
  /** Another relay on the same store, as a second process has it. */
  peer(relay: BusRelay): Promise<BusRelay>;
  /** Cuts the connection `relay`'s bus listens on (a network fault, a database restart). */
  dropConnection(relay: BusRelay): Promise<void>;
}

/** A subscriber that keeps what it heard. */
function listen(bus: ChangeBus): { heard: ChangeNotice[]; stop: () => void } {
  const heard: ChangeNotice[] = [];
  const stop = bus.subscribe((notice) => heard.push(notice));
  return { heard, stop };
}

/** A subscriber that has heard its first `resync` (it listens), with nothing else kept. */
async function listening(bus: ChangeBus): Promise<{ heard: ChangeNotice[]; stop: () => void }> {
  const subscriber = listen(bus);
  await until(() => subscriber.heard.length > 0, 5000, 'the listening nudge');
  expect(subscriber.heard).toEqual([{ kind: 'resync' }]);
  subscriber.heard.length = 0;
  return subscriber;
}

/** A change writing a transaction, one command and one event on terminal t-1. */
const change = (store: Store, externalId: string) =>
  store.changeTransaction({ terminalId: 't-1', externalId }, () => {
    const txn = {
      id: `txn-${externalId}`,
      terminal_id: 't-1',
      external_id: externalId,
      type: 'PURCHASE' as const,
      state: 'CONFIRMED' as const,
      created_at: NOW,
      updated_at: NOW,
    };
    return {
      write: { txn, accountId: 'acct-1', dueAt: NOW, version: 3 },
      commands: [
        {
          type: 'transaction.cancel' as const,
          command_id: `cmd-${externalId}`,
          transaction_id: txn.id,
        },
      ],
      events: [
        {
          id: `ev-${externalId}`,
          accountId: 'acct-1',
          subject: 't-1',
          kind: 'Transaction' as const,
          time: NOW,
          data: txn,
        },
      ],
      result: null,
    };
  });

export function changeBusConformance(name: string, factory: ChangeBusFactory): void {
  /** Two relays on one store with terminal t-1. */
  const twoRelays = async (): Promise<[BusRelay, BusRelay]> => {
    const mine = await factory.open();
    await mine.store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: NOW });
    await mine.store.createTerminal(terminalRecord('t-1'));
    return [mine, await factory.peer(mine)];
  };

  describe(`${name} change bus conformance`, () => {
    it("a subscriber hears another relay's commits, in commit order, and its announcements; never its own relay's", async () => {
      const [mine, theirs] = await twoRelays();
      const { heard } = await listening(mine.bus);
      // Its own first: delivered in commit order, they would come before the others'.
      await change(mine.store, 'own');
      await mine.store.recordReport('t-1', { journal: 'j', seq: 1 });
      await mine.store.ackCommand('t-1', 'cmd-own', NOW);
      await mine.bus.announce({ kind: 'webhooks' });

      await change(theirs.store, 'other');
      await theirs.store.ackCommand('t-1', 'cmd-other', NOW);
      await theirs.store.ackCommand('t-1', 'cmd-other', NOW); // acknowledged already: nothing to tell
      await theirs.store.recordReport('t-1', { journal: 'j', seq: 2 });
      await theirs.store.updateTerminalStatus('t-1', { battery_percentage: 50 }, NOW, 'ev-status');
      await theirs.bus.announce({ kind: 'simulator', terminalId: 't-1' });
      const expected: ChangeNotice[] = [
        { kind: 'transaction', terminalId: 't-1', externalId: 'other', version: 3, dueAt: NOW },
        {
          kind: 'events',
          events: [{ accountId: 'acct-1', subject: 't-1', kind: 'Transaction' }],
        },
        { kind: 'command-acked', commandId: 'cmd-other' },
        { kind: 'report', terminalId: 't-1' },
        {
          kind: 'events',
          events: [{ accountId: 'acct-1', subject: 't-1', kind: 'TerminalStatus' }],
        },
        { kind: 'simulator', terminalId: 't-1' },
      ];
      await until(() => heard.length >= expected.length, 5000, 'the changes');
      expect(heard).toEqual(expected);
      await Promise.all([mine.close(), theirs.close()]);
    });

    it('a notice too large to send whole tells the readers to read again', async () => {
      const [mine, theirs] = await twoRelays();
      const { heard } = await listening(mine.bus);
      await theirs.store.changeTransaction({ terminalId: 't-1', externalId: 'many' }, () => ({
        events: Array.from({ length: 100 }, (_, i) => ({
          id: `ev-many-${i}`,
          accountId: 'acct-1',
          subject: 't-1',
          kind: 'TerminalStatus' as const,
          time: NOW,
          data: { terminal_id: 't-1', updated_at: NOW },
        })),
        result: null,
      }));
      await until(() => heard.length > 0, 5000, 'the events notice');
      expect(heard).toEqual([{ kind: 'events' }]);
      await Promise.all([mine.close(), theirs.close()]);
    });

    it('a change rolled back tells nothing; a listener unsubscribed, or of a closed bus, hears nothing', async () => {
      const [mine, theirs] = await twoRelays();
      const third = await factory.peer(mine);
      const gone = await listening(mine.bus);
      const closed = await listening(third.bus);
      await expect(
        theirs.store.changeTransaction({ terminalId: 't-1', externalId: 'refused' }, () => {
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      gone.stop();
      await third.bus.close();
      const late = listen(third.bus);
      // A subscriber of a bus already listening hears what follows, with no nudge.
      const { heard } = listen(mine.bus);
      await theirs.bus.announce({ kind: 'webhooks' });
      await until(() => heard.length > 0, 5000, 'the announcement');
      expect(heard).toEqual([{ kind: 'webhooks' }]);
      expect(gone.heard).toEqual([]);
      expect(closed.heard).toEqual([]);
      expect(late.heard).toEqual([]);
      await Promise.all([mine.close(), theirs.close(), third.close()]);
    });

    it('listens again after its connection drops, nudges its listeners to re-read, and hears what follows', async () => {
      const [mine, theirs] = await twoRelays();
      const { heard } = await listening(mine.bus);
      await factory.dropConnection(mine);
      await until(() => heard.length > 0, 5000, 'the nudge after listening again');
      expect(heard).toEqual([{ kind: 'resync' }]);
      await theirs.bus.announce({ kind: 'webhooks' });
      await until(() => heard.length > 1, 5000, 'a change after listening again');
      expect(heard).toEqual([{ kind: 'resync' }, { kind: 'webhooks' }]);
      await Promise.all([mine.close(), theirs.close()]);
    });
  });
}
