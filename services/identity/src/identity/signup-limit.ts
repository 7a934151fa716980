import rateLimit, { type RateLimitPluginOptions } from '@fastify/rate-limit';
import { AppError, clientAddress, parseTrustedProxies, type App, type Cache, type Logger } from '@app/platform';
import { createMemoryCache } from '@app/platform';

export interface SignupLimitOptions {
  /** Sign-ups one client address may make per window (SIGNUP_RATE_LIMIT). */
  max: number;
  windowSeconds: number;
  /** TRUST_PROXY: whose X-Forwarded-For names the client (the gateway, behind it). */
  trustProxy: string;
  cache: Cache;
  logger: Logger;
}

/** Counters a replica keeps while the shared cache is down. */
const FALLBACK_ENTRIES = 100_000;

/**
 * A store for @fastify/rate-limit over the platform's cache port: Redis when the cache is
 * (one window shared by every replica), the in-process LRU otherwise. Its own Redis store
 * would need a second client and a second set of timeouts; the port already has both. When
 * the shared cache cannot answer, the replica counts alone, so sign-up is never unthrottled.
 */
function cacheStore(shared: Cache, logger: Logger) {
  const local = createMemoryCache({ maxEntries: FALLBACK_ENTRIES });
  return class CacheStore {
    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
      const windowSeconds = Math.max(1, Math.ceil(timeWindow / 1000));
      const hit = (cache: Cache) => cache.hit(`identity:signup:${key}`, windowSeconds);
      hit(shared)
        .catch((error: unknown) => {
          logger.warn({ err: error }, 'sign-up limit: shared cache unavailable; counting in this process');
          return hit(local);
        })
        .then(({ count, resetSeconds }) => callback(null, { current: count, ttl: resetSeconds * 1000 }), callback);
    }

    child(): CacheStore {
      return new CacheStore();
    }
  };
}

/** The route option that throttles POST /api/v1/identity per client address. */
export type SignupRateLimit = NonNullable<RateLimitPluginOptions> & { max: number; timeWindow: number };

/**
 * Registers @fastify/rate-limit for the routes of this plugin that ask for it (none
 * globally) and returns the route option for sign-up. Answers carry the IETF draft's
 * `RateLimit-Limit`/`RateLimit-Remaining`/`RateLimit-Reset` (enableDraftSpec) and, once over,
 * 429 problem+json with `Retry-After`.
 */
export async function registerSignupLimit(app: App, options: SignupLimitOptions): Promise<SignupRateLimit> {
  const trusted = parseTrustedProxies(options.trustProxy);
  await app.register(rateLimit, {
    global: false,
    store: cacheStore(options.cache, options.logger),
    enableDraftSpec: true,
    keyGenerator: (request) => clientAddress(trusted, request.socket.remoteAddress, request.headers['x-forwarded-for']),
    errorResponseBuilder: (_request, context) => {
      const retryAfter = Math.max(1, Math.ceil(context.ttl / 1000));
      return new AppError('IDENTITY_SIGNUP_RATE_LIMITED', 429, 'error.signupRateLimited', { retryAfter }, { 'retry-after': String(retryAfter) });
    },
  });
  return { max: options.max, timeWindow: options.windowSeconds * 1000 };
}
