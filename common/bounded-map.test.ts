import { describe, expect, it } from 'vitest';
import { BoundedMap } from './bounded-map.js';

describe('BoundedMap', () => {
  it('drops the entry set longest ago once full', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1).set('b', 2).set('c', 3);
    expect([...map.keys()]).toEqual(['b', 'c']);
  });

  it('makes a key set again the newest, without dropping anything', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1).set('b', 2).set('a', 10);
    expect([...map.entries()]).toEqual([
      ['b', 2],
      ['a', 10],
    ]);
    map.set('c', 3);
    expect([...map.keys()]).toEqual(['a', 'c']);
  });
});
