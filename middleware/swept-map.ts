/**
 * The memory rate and window stores' and the concurrency partitions' shared shell: state per key
 * in a `Map` that, each time it has doubled since its last sweep, drops the entries that hold
 * nothing any more, so 100 000 keys seen once cost nothing for long.
 * @module
 */

const sweepFloor = 1_024;

/**
 * A `Map` of per-key state swept of stale entries as it grows.
 * @internal
 */
export class SweptMap<V> {
  readonly #entries = new Map<string, V>();
  #sweepAt = sweepFloor;

  /** The entry of `key`, if held. */
  get(key: string): V | undefined {
    return this.#entries.get(key);
  }

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Adds `value` for `key`; when the map has doubled, drops every other entry `stale` says holds nothing. */
  add(key: string, value: V, stale: (held: V) => boolean): void {
    this.#entries.set(key, value);
    if (this.#entries.size < this.#sweepAt) return;
    for (const [name, held] of this.#entries) if (held !== value && stale(held)) this.#entries.delete(name);
    this.#sweepAt = Math.max(sweepFloor, this.#entries.size * 2);
  }
}
