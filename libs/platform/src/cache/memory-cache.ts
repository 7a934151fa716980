import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Cache } from './cache.js';

export interface MemoryCacheOptions {
  /** Entries kept before the least recently used is evicted. */
  maxEntries: number;
}

/**
 * An LRU made on its first write. lru-cache allocates its whole index up front (about 28 bytes
 * an entry): the throttles' 100,000-entry fallbacks held ~11 MB resident in every process
 * although they are written only while Redis is down, and the embedded default never is.
 */
function lazyLru<V extends NonNullable<unknown>>(max: number) {
  let lru: LRUCache<string, V> | undefined;
  return {
    /** The LRU if anything was ever written; reads and deletes need nothing more. */
    get existing() {
      return lru;
    },
    get forWrite() {
      return (lru ??= new LRUCache<string, V>({ max }));
    },
  };
}

/** The in-process cache of the all-in-one default: an LRU with per-entry TTLs. */
export function createMemoryCache(options: MemoryCacheOptions): Cache {
  const entries = lazyLru<string>(options.maxEntries);
  /** Stamped keys (see Cache.readStamped): the stamp, and the value once one was written. */
  const stamped = lazyLru<{ stamp: string; value: string | null }>(options.maxEntries);
  /** Rate-limit windows: their count and when they reset, on the wall clock. */
  const windows = lazyLru<{ count: number; resetAt: number }>(options.maxEntries);
  /** Adds one to a counter, keeping the TTL it was created with. */
  const increment = (key: string) => {
    const value = Number(entries.existing?.get(key) ?? 0) + 1;
    entries.forWrite.set(key, String(value), { noUpdateTTL: true });
    return value;
  };
  /** Expiring sets: member -> expiry (epoch ms). Few and small (see Cache.addExpiring). */
  const sets = new Map<string, Map<string, number>>();
  const liveSet = (key: string) => {
    const set = sets.get(key);
    if (!set) return undefined;
    const now = Date.now();
    for (const [member, expiresAt] of set) if (expiresAt <= now) set.delete(member);
    if (set.size === 0) sets.delete(key);
    return set.size > 0 ? set : undefined;
  };
  return {
    kind: 'memory',
    get: async (key) => entries.existing?.get(key) ?? null,
    getMany: async (keys) => keys.map((key) => entries.existing?.get(key) ?? null),
    set: async (key, value, ttlSeconds) => {
      entries.forWrite.set(key, value, { ttl: ttlSeconds * 1000 });
    },
    delete: async (...keys) => {
      for (const key of keys) {
        entries.existing?.delete(key);
        stamped.existing?.delete(key);
      }
    },
    readStamped: async (key, ttlSeconds) => {
      const current = stamped.existing?.get(key);
      if (current) return current;
      const fresh = { stamp: randomUUID(), value: null };
      stamped.forWrite.set(key, fresh, { ttl: ttlSeconds * 1000 });
      return { ...fresh };
    },
    writeIfStamped: async (key, stamp, value, ttlSeconds) => {
      if (stamped.existing?.get(key)?.stamp !== stamp) return false;
      stamped.forWrite.set(key, { stamp, value }, { ttl: ttlSeconds * 1000 });
      return true;
    },
    increment: async (key) => increment(key),
    hit: async (key, windowSeconds) => {
      const now = Date.now();
      const current = windows.existing?.get(key);
      const window = current && current.resetAt > now ? current : { count: 0, resetAt: now + windowSeconds * 1000 };
      window.count += 1;
      windows.forWrite.set(key, window);
      return { count: window.count, resetSeconds: Math.max(1, Math.ceil((window.resetAt - now) / 1000)) };
    },
    addExpiring: async (key, member, expiresAt) => {
      const set = liveSet(key) ?? new Map<string, number>();
      set.set(member, Math.max(set.get(member) ?? 0, expiresAt * 1000));
      if (set.get(member)! > Date.now()) sets.set(key, set);
      liveSet(key);
    },
    liveMembers: async (key) => [...(liveSet(key)?.keys() ?? [])],
    ping: async () => ({ version: 'memory' }),
    close: async () => {
      sets.clear();
      entries.existing?.clear();
      stamped.existing?.clear();
      windows.existing?.clear();
    },
  };
}
