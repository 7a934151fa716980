import cors from '@fastify/cors';
import type { App } from './app.js';

/** Methods the API answers to (DESIGN "API conventions"); a preflight for another gets no allowance. */
export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
/** Request headers a browser may send: the bearer token, JSON or form bodies, the opt-ins clients use, and conditional requests on records. */
export const CORS_ALLOWED_HEADERS = ['authorization', 'content-type', 'accept-language', 'prefer', 'x-request-id', 'if-match', 'if-none-match', 'idempotency-key'] as const;
/** Response headers a page may read besides the CORS-safelisted ones: paging, caching, redirects, limits. */
export const CORS_EXPOSED_HEADERS = ['Link', 'ETag', 'Location', 'Content-Range', 'Retry-After', 'X-Request-Id'] as const;
/**
 * How long a browser may reuse a preflight answer. Chromium caps it at 7200 s and Firefox at
 * 86400 s; two hours keeps origins dropped from CORS_ORIGINS from lingering much longer.
 */
export const CORS_MAX_AGE_SECONDS = 7_200;

/**
 * CORS for exactly `origins` (exact matches of the `Origin` header). A preflight from one of
 * them is answered 204 in an onRequest hook, so it must be registered before the auth hook: a
 * preflight carries no token. Any other origin, or a request with none, gets no CORS header
 * at all (the plugin would otherwise send its exposed headers and answer every preflight).
 * Only the edge registers it, so answers an edge proxies are never given it twice.
 */
export async function registerCors(app: App, origins: readonly string[]): Promise<void> {
  const allowed = new Set(origins);
  // The plugin's catch-all OPTIONS route answers a preflight it did not allow with a 404, as
  // for any unknown route; it declares no auth, which would make that a 401 for no reason.
  app.addHook('onRoute', (route) => {
    if (route.method === 'OPTIONS' && route.url === '*') route.config = { ...route.config, auth: 'public' };
  });
  await app.register(cors, {
    origin: (origin, callback) => callback(null, origin !== undefined && allowed.has(origin)),
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: CORS_MAX_AGE_SECONDS,
    strictPreflight: true,
  });
}

/** `vary` with `field` added once, keeping what other parts of the answer already vary on. */
export function varyWith(current: unknown, field: string): string {
  const text = Array.isArray(current) ? current.join(', ') : typeof current === 'string' ? current : '';
  if (text === '') return field;
  const fields = text.split(',').map((name) => name.trim().toLowerCase());
  return fields.includes('*') || fields.includes(field.toLowerCase()) ? text : `${text}, ${field}`;
}
