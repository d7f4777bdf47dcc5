import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aedesMemoryPersistence, retainedByTopicPersistence } from './retained-by-topic.js';

type Store = ReturnType<typeof aedesMemoryPersistence>;

async function retain(store: Store, topic: string, payload: string): Promise<void> {
  const packet = { cmd: 'publish', topic, payload: Buffer.from(payload), qos: 1, retain: true };
  await (store.storeRetained as unknown as (p: typeof packet) => Promise<void>)(packet);
}

async function found(store: Store, filters: string[]): Promise<string[]> {
  const out: string[] = [];
  for await (const packet of store.createRetainedStreamCombi(filters)) {
    const { topic, payload } = packet as { topic: string; payload: Buffer };
    out.push(`${topic}=${payload.toString()}`);
  }
  return out.sort();
}

const level = fc.constantFrom('tps', 'v1', 't', 'a', 'b', 'presence', 'cmd');
const topic = fc.array(level, { minLength: 1, maxLength: 5 }).map((l) => l.join('/'));
const filter = fc
  .array(fc.oneof(level, fc.constant('+')), { minLength: 1, maxLength: 5 })
  .chain((l) => fc.constantFrom(l.join('/'), `${l.join('/')}/#`, l.join('/')));

describe('retained messages by topic', () => {
  it('finds what aedes-persistence finds, for exact filters, wildcards and a mix', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(topic, fc.constantFrom('', 'x', 'y')), { maxLength: 30 }),
        fc.array(fc.oneof(filter, topic), { minLength: 1, maxLength: 4 }),
        async (writes, filters) => {
          const theirs = aedesMemoryPersistence();
          const ours = retainedByTopicPersistence();
          for (const [t, payload] of writes) {
            await retain(theirs, t, payload);
            await retain(ours, t, payload);
          }
          expect(await found(ours, filters)).toEqual(await found(theirs, filters));
        },
      ),
    );
  });

  it('forgets a topic retained with an empty payload', async () => {
    const ours = retainedByTopicPersistence();
    await retain(ours, 'tps/v1/t/a/presence', '{"connected":true}');
    expect(await found(ours, ['tps/v1/t/a/presence'])).toEqual([
      'tps/v1/t/a/presence={"connected":true}',
    ]);
    await retain(ours, 'tps/v1/t/a/presence', '');
    expect(await found(ours, ['tps/v1/t/a/presence', 'tps/v1/t/+/presence'])).toEqual([]);
  });
});
