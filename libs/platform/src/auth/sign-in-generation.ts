import { bumpGeneration, readGenerations } from '../cache/generations.js';
import type { Cache } from '../cache/cache.js';
import type { Logger } from '../logger.js';

/**
 * The generation (see cache/generations.ts) of everything a sign-in decision reads: credentials
 * and identity replace it after every change of a credential or an identity, before they
 * answer; the token issuer's process-local caches of those decisions are valid only while it is
 * unchanged.
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
  await bumpGeneration(cache, [SIGN_IN_GENERATION_KEY, GENERATION_TTL_SECONDS]).catch((error: unknown) => {
    logger.warn({ err: error }, 'sign-in generation not bumped; cached sign-in decisions end with their event or TTL');
  });
}

/**
 * The current generation (created when missing), or undefined when the cache cannot answer.
 * Read it *before* the reads a cache entry is filled from.
 */
export async function readSignInGeneration(cache: Cache): Promise<string | undefined> {
  return (await readGenerations(cache, [[SIGN_IN_GENERATION_KEY, GENERATION_TTL_SECONDS]]))?.[0];
}
