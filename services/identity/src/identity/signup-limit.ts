import rateLimit, { type RateLimitPluginOptions } from '@fastify/rate-limit';
import { AppError, clientAddress, parseTrustedProxies, type App, type Cache, type Logger } from '@app/platform';
import { createMemoryCache, createOutageLog } from '@app/platform';

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
  const outage = createOutageLog(logger, 'cache', {
    down: 'sign-up limit: shared cache unavailable; counting in this process',
    up: 'sign-up limit: shared cache answers again',
  });
  return class CacheStore {
    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
      const windowSeconds = Math.max(1, Math.ceil(timeWindow / 1000));
      const hit = (cache: Cache) => cache.hit(`identity:signup:${key}`, windowSeconds);
      hit(shared)
        .then(
          (result) => {
            outage.succeeded();
            return result;
          },
          (error: unknown) => {
            outage.failed(error);
            return hit(local);
          },
        )
        .then(({ count, resetSeconds }) => callback(null, { current: count, ttl: resetSeconds * 1000 }), callback);
    }

    child(): CacheStore {
      return new CacheStore();
    }
  };
}

/** The route option that throttles POST /api/v1/identity per client address. */
export type SignupRateLimit = NonNullable<RateLimitPluginOptions> & { max: number; timeWindow: number };

/** The policy's name in the structured RateLimit headers. */
const POLICY = 'signup';

/**
 * Registers @fastify/rate-limit for the routes of this plugin that ask for it (none
 * globally) and returns the route option for sign-up. Answers carry the IETF httpapi draft's
 * headers in both its shapes: the current structured pair, `RateLimit-Policy: "signup";q=100;w=600`
 * and `RateLimit: "signup";r=<remaining>;t=<seconds to reset>`, and the earlier
 * `RateLimit-Limit`/`-Remaining`/`-Reset` (enableDraftSpec) that clients already read; once
 * over, 429 problem+json with `Retry-After`.
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
  // The plugin sets the earlier headers on every limited answer, the 429 included; the
  // structured pair is derived from them, so both always agree.
  app.addHook('onSend', async (_request, reply, payload) => {
    const limit = reply.getHeader('ratelimit-limit');
    if (limit === undefined) return payload;
    reply.header('ratelimit-policy', `"${POLICY}";q=${String(limit)};w=${options.windowSeconds}`);
    reply.header('ratelimit', `"${POLICY}";r=${String(reply.getHeader('ratelimit-remaining'))};t=${String(reply.getHeader('ratelimit-reset'))}`);
    return payload;
  });
  return { max: options.max, timeWindow: options.windowSeconds * 1000 };
}
