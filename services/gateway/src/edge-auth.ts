import { accessTokenVerifier, bearerToken, invalidToken, type App, type PlatformConfig, type TokenVerifier } from '@app/platform';

/**
 * Requests the gateway forwards without a token: probes, docs, signing up, and the OAuth
 * endpoints a client calls to get a token in the first place. Paths are matched whole
 * (anchored, no prefix matching), so no path that reaches another route can pass as one of these.
 */
export const PUBLIC_ROUTES: { methods: string[]; path: RegExp }[] = [
  { methods: ['GET', 'HEAD'], path: /^\/health\/(liveness|readiness)\/?$/ },
  { methods: ['GET', 'HEAD'], path: /^\/api\/v1\/health\/(liveness|readiness)\/?$/ },
  { methods: ['GET', 'HEAD'], path: /^\/docs(\/.*)?$/ },
  // Each generic CRUD domain's ping.
  { methods: ['GET', 'HEAD'], path: /^\/api\/v1\/[a-z][a-z0-9-]*\/ping\/?$/ },
  // Creating an identity (signing up) is open; every other identity route needs a token.
  { methods: ['POST'], path: /^\/api\/v1\/identity\/?$/ },
  { methods: ['POST'], path: /^\/api\/v1\/sso\/(token|revoke)\/?$/ },
  { methods: ['GET', 'HEAD'], path: /^\/api\/v1\/sso\/jwks\/?$/ },
  { methods: ['GET', 'HEAD'], path: /^\/\.well-known\/openid-configuration\/?$/ },
];

export function isPublic(method: string, url: string): boolean {
  const path = url.split('?')[0] ?? '';
  return PUBLIC_ROUTES.some((route) => route.methods.includes(method) && route.path.test(path));
}

/** The gateway's verifier: sso's JWKS, with verified tokens cached until `exp` (VERIFIED_TOKEN_CACHE_MAX). */
export function edgeVerifier(config: PlatformConfig): TokenVerifier {
  return accessTokenVerifier(config);
}

/**
 * Checks the bearer token of every request but the public ones before it is proxied, so a
 * forged or expired token never reaches a service (which verifies it again itself: the
 * gateway is not the only line). The 401 names the problem in `WWW-Authenticate` (RFC 6750).
 */
export function registerEdgeAuth(app: App, verifier: TokenVerifier): void {
  app.addHook('onRequest', async (request) => {
    if (request.method === 'OPTIONS' || isPublic(request.method, request.url)) return;
    const token = bearerToken(request);
    if (!token) throw invalidToken();
    request.principal = await verifier.verify(token);
  });
}
