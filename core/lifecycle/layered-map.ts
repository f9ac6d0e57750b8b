/**
 * An immutable map that iterates exactly as a JS Map would after the same sets and deletes (a replaced key keeps its
 * place, a new key or a deleted one set again goes last), whose `with` and `without` cost O(√n) amortized instead of
 * a copy of all n entries. The worker registry is a new value at every heartbeat; copying its map of 1,000 workers
 * each time made the heartbeats of an interval cost O(workers²) (docs/performance.md, "A busy master").
 *
 * A value is a base map plus three small layers (base keys with new values, base keys deleted, keys added after the
 * base); none of them is mutated once the value is built, so every value handed out stays valid whatever is derived
 * from it later. When the layers outgrow √n they are folded into a new base. The one private field written after
 * construction, `flattened`, memoizes the map the value already denotes: it changes no answer.
 */
export class LayeredMap<K, V> implements ReadonlyMap<K, V> {
  private flattened: ReadonlyMap<K, V> | undefined;

  private constructor(
    private readonly base: ReadonlyMap<K, V>,
    private readonly replaced: ReadonlyMap<K, V>,
    private readonly removed: ReadonlySet<K>,
    private readonly appended: ReadonlyMap<K, V>,
  ) {
    if (replaced.size === 0 && removed.size === 0 && appended.size === 0) this.flattened = base;
  }

  /** The map as a LayeredMap: itself if it is one, otherwise a copy (the caller may still change a plain Map). */
  static of<K, V>(map: ReadonlyMap<K, V>): LayeredMap<K, V> {
    if (map instanceof LayeredMap) return map as LayeredMap<K, V>;
    return LayeredMap.flatOver(new Map(map));
  }

  /** A map its caller built and hands over, changing it no more: taken as the base, without the copy `of` makes. */
  static adopt<K, V>(map: Map<K, V>): LayeredMap<K, V> {
    return LayeredMap.flatOver(map);
  }

  get size(): number {
    return this.base.size - this.removed.size + this.appended.size;
  }

  has(key: K): boolean {
    if (this.flattened !== undefined) return this.flattened.has(key);
    if (this.appended.size > 0 && this.appended.has(key)) return true;
    if (this.removed.size > 0 && this.removed.has(key)) return false;
    return this.base.has(key);
  }

  get(key: K): V | undefined {
    if (this.flattened !== undefined) return this.flattened.get(key);
    if (this.appended.size > 0 && this.appended.has(key)) return this.appended.get(key);
    if (this.removed.size > 0 && this.removed.has(key)) return undefined;
    if (this.replaced.size > 0 && this.replaced.has(key)) return this.replaced.get(key);
    return this.base.get(key);
  }

  /** This map with `key` set to `value`. */
  with(key: K, value: V): LayeredMap<K, V> {
    if (this.isStale()) return LayeredMap.flatOver(this.flattened!).with(key, value);
    if (this.appended.has(key) || !this.liveInBase(key)) {
      return this.layered(this.base, this.replaced, this.removed, new Map(this.appended).set(key, value));
    }
    return this.layered(this.base, new Map(this.replaced).set(key, value), this.removed, this.appended);
  }

  /** This map without `key` (itself when it has no such key). */
  without(key: K): LayeredMap<K, V> {
    if (this.isStale()) return LayeredMap.flatOver(this.flattened!).without(key);
    if (this.appended.has(key)) {
      const appended = new Map(this.appended);
      appended.delete(key);
      return this.layered(this.base, this.replaced, this.removed, appended);
    }
    if (!this.liveInBase(key)) return this;
    const replaced = new Map(this.replaced);
    replaced.delete(key);
    return this.layered(this.base, replaced, new Set(this.removed).add(key), this.appended);
  }

  entries(): MapIterator<[K, V]> {
    return this.flat().entries();
  }

  keys(): MapIterator<K> {
    return this.flat().keys();
  }

  values(): MapIterator<V> {
    return this.flat().values();
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.flat()[Symbol.iterator]();
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [key, value] of this.flat()) callback.call(thisArg, value, key, this);
  }

  get [Symbol.toStringTag](): string {
    return 'LayeredMap';
  }

  /** Already flattened (it was iterated): what derives from it starts from the flat map, with empty layers. */
  private isStale(): boolean {
    return this.flattened !== undefined && this.flattened !== this.base;
  }

  private static flatOver<K, V>(flat: ReadonlyMap<K, V>): LayeredMap<K, V> {
    return new LayeredMap(flat, EMPTY_MAP, EMPTY_SET, EMPTY_MAP);
  }

  private liveInBase(key: K): boolean {
    return this.base.has(key) && !this.removed.has(key);
  }

  /** The layers as a new value, folded into a new base once they outgrow √n (at least 16 entries). */
  private layered(
    base: ReadonlyMap<K, V>,
    replaced: ReadonlyMap<K, V>,
    removed: ReadonlySet<K>,
    appended: ReadonlyMap<K, V>,
  ): LayeredMap<K, V> {
    const next = new LayeredMap(base, replaced, removed, appended);
    const layers = replaced.size + removed.size + appended.size;
    if (layers * layers <= Math.max(256, base.size)) return next;
    return LayeredMap.flatOver(next.flat());
  }

  /** The map this value denotes, built once. */
  private flat(): ReadonlyMap<K, V> {
    if (this.flattened !== undefined) return this.flattened;
    const map = new Map<K, V>();
    for (const [key, value] of this.base) {
      if (this.removed.has(key)) continue;
      map.set(key, this.replaced.has(key) ? (this.replaced.get(key) as V) : value);
    }
    for (const [key, value] of this.appended) map.set(key, value);
    this.flattened = map;
    return map;
  }
}

const EMPTY_MAP: ReadonlyMap<never, never> = new Map<never, never>();
const EMPTY_SET: ReadonlySet<never> = new Set<never>();
