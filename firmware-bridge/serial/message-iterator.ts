/**
 * An async iterator over an emitter's 'message' events that ends at its 'close' event:
 * messages that arrive between two `next()` calls wait in order; none is lost.
 */
import type { EventEmitter } from 'node:events';

export function iterateMessages<T>(
  emitter: EventEmitter,
  closed: boolean,
): AsyncIterableIterator<T> {
  const buffered: T[] = [];
  const waiting: ((result: IteratorResult<T>) => void)[] = [];
  let done = false;
  const onMessage = (message: T) => {
    const waiter = waiting.shift();
    if (waiter) waiter({ value: message, done: false });
    else buffered.push(message);
  };
  const finish = () => {
    if (done) return;
    done = true;
    emitter.off('message', onMessage);
    emitter.off('close', finish);
    for (const waiter of waiting.splice(0)) waiter({ value: undefined, done: true });
  };
  emitter.on('message', onMessage);
  emitter.on('close', finish);
  if (closed) finish();
  return {
    next: () => {
      if (buffered.length > 0) {
        return Promise.resolve({ value: buffered.shift() as T, done: false });
      }
      if (done) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve) => waiting.push(resolve));
    },
    return: () => {
      finish();
      buffered.length = 0;
      return Promise.resolve({ value: undefined, done: true });
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
