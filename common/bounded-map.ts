/**
 * A Map that keeps at most `limit` entries: setting a new key when full drops the entry
 * set longest ago. Setting a key again makes it the newest. For in-memory caches and
 * counters of relay and agent, which must not grow with traffic.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(readonly limit: number) {
    super();
  }

  override set(key: K, value: V): this {
    if (this.has(key)) this.delete(key);
    else if (this.size >= this.limit) this.delete(this.keys().next().value as K);
    return super.set(key, value);
  }
}
