import { randomUUID } from 'node:crypto';
import type { Cache } from './cache.js';

/**
 * Generations: values in the shared cache that a writer replaces after its change committed
 * and before it answers. A process-local cache entry remembers the generations it read
 * *before* the reads it was filled from, and is served only while they are unchanged; so a
 * request that starts after a change was answered never gets what was cached before it, in
 * any replica (read-your-writes, as with no cache). The sign-in generation
 * (auth/sign-in-generation.ts) is one.
 *
 * Each value is a fresh UUID, never a counter: a key lost to eviction or expiry and created
 * again can never repeat a value an old entry holds.
 */

/** A generation's key, and how long one created lives: longer than any entry filled under it. */
export type GenerationKey = [key: string, ttlSeconds: number];

/**
 * The current generations at `keys`, in order, each created when missing; undefined when the cache cannot answer:
 * then nothing may be cached or served from a cache. Two readers racing to create a key each
 * write their own value: the loser's entry only misses once.
 */
export async function readGenerations(cache: Cache, keys: GenerationKey[]): Promise<string[] | undefined> {
  try {
    const current = await cache.getMany(keys.map(([key]) => key));
    return await Promise.all(
      current.map(async (value, index) => {
        if (value) return value;
        const fresh = randomUUID();
        const [key, ttlSeconds] = keys[index]!;
        await cache.set(key, fresh, ttlSeconds);
        return fresh;
      }),
    );
  } catch {
    return undefined;
  }
}

/**
 * Marks every entry filled under the generation at `key` stale. Rejects when the cache cannot
 * be written: the caller's change has committed already, so it logs and goes on; readers that
 * cannot read the cache either cache nothing, and the entries' short TTLs bound the rest.
 */
export async function bumpGeneration(cache: Cache, [key, ttlSeconds]: GenerationKey): Promise<void> {
  await cache.set(key, randomUUID(), ttlSeconds);
}
