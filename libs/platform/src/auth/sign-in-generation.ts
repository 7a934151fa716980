import { randomUUID } from 'node:crypto';
import type { Cache } from '../cache/cache.js';
import type { Logger } from '../logger.js';

/**
 * One value in the shared cache that changes whenever anything a sign-in decision reads
 * changes (a credential updated or revoked, an identity updated): the token issuer's process-local caches
 * of those decisions are valid only while it is unchanged. The writer replaces it after its
 * change committed and before it answers, so a grant that starts after the answer never uses
 * what was cached before the change, in any replica (read-your-writes, as with no cache).
 *
 * Each value is a fresh UUID, never a counter: a key lost to eviction or expiry and created
 * again can never repeat a value an old cache entry holds.
 */
export const SIGN_IN_GENERATION_KEY = 'auth:sign-in-generation';

/** Long enough to outlive any cache entry (seconds); a key that expires only costs one refill. */
const GENERATION_TTL_SECONDS = 86_400;

/**
 * Marks every cached sign-in decision stale. Never throws: the change has committed already;
 * when the cache cannot be written, readers that cannot read it either cache nothing, and the
 * change's own event and the readers' short TTL still drop what they hold.
 */
export async function bumpSignInGeneration(cache: Cache, logger: Logger): Promise<void> {
  await cache.set(SIGN_IN_GENERATION_KEY, randomUUID(), GENERATION_TTL_SECONDS).catch((error: unknown) => {
    logger.warn({ err: error }, 'sign-in generation not bumped; cached sign-in decisions end with their event or TTL');
  });
}

/**
 * The current generation (created when missing), or undefined when the cache cannot answer:
 * then nothing may be cached or served from a cache. Read it *before* the reads a cache entry
 * is filled from, so a change that commits after them has bumped it past the entry's value.
 */
export async function readSignInGeneration(cache: Cache): Promise<string | undefined> {
  try {
    const current = await cache.get(SIGN_IN_GENERATION_KEY);
    if (current) return current;
    // Two readers racing here each write their own value: entries of the loser only miss once.
    const fresh = randomUUID();
    await cache.set(SIGN_IN_GENERATION_KEY, fresh, GENERATION_TTL_SECONDS);
    return fresh;
  } catch {
    return undefined;
  }
}
