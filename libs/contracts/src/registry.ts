/**
 * The one registry of the platform's services: their names, the port each listens on when
 * run alone, the variable that tells others where it is in split mode, and the public path
 * prefixes the gateway routes to it. The gateway, the all-in-one, the health report, the
 * typed clients and the deployment manifests all read it from here.
 */
export const SERVICES = {
  gateway: { port: 3000, urlVariable: 'GATEWAY_URL', prefixes: [] },
  identity: { port: 3001, urlVariable: 'IDENTITY_URL', prefixes: ['/api/v1/identity'] },
  credentials: { port: 3002, urlVariable: 'CREDENTIALS_URL', prefixes: ['/api/v1/credentials'] },
  sso: { port: 3003, urlVariable: 'SSO_URL', prefixes: ['/api/v1/sso', '/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'] },
  // Generic domains: whatever else is under /api/v1 (the other services' longer prefixes win),
  // so a new domain is served through the gateway without touching this table.
  crud: { port: 3004, urlVariable: 'CRUD_URL', prefixes: ['/api/v1'] },
  health: { port: 3005, urlVariable: 'HEALTH_URL', prefixes: ['/api/v1/health'] },
} as const satisfies Record<string, { port: number; urlVariable: `${Uppercase<string>}_URL`; prefixes: readonly string[] }>;

export type ServiceName = keyof typeof SERVICES;

export const SERVICE_NAMES = Object.keys(SERVICES) as ServiceName[];

/**
 * The domain services behind the gateway, in start order. The gateway routes to them and the
 * health service reports on them; `PLATFORM_SERVICES` narrows the list for a deployment.
 */
export const DOMAIN_SERVICES: readonly ServiceName[] = ['identity', 'credentials', 'sso', 'crud'];

/**
 * Requests the edge lets through without a token: probes, docs, signing up, and the OAuth
 * endpoints a client calls to get a token in the first place. Paths are matched whole
 * (anchored, no prefix matching), so no path that reaches another route can pass as one of
 * these. Every route a service declares `public` or `optional` must be listed here (a test
 * checks both directions), so the gateway in split mode and the all-in-one agree.
 */
export const PUBLIC_ROUTES: readonly { methods: readonly string[]; path: RegExp }[] = [
  { methods: ['GET', 'HEAD'], path: /^\/health\/(liveness|readiness)\/?$/ },
  { methods: ['GET', 'HEAD'], path: /^\/api\/v1\/health\/(liveness|readiness)\/?$/ },
  { methods: ['GET', 'HEAD'], path: /^\/docs(\/.*)?$/ },
  // The root only redirects to the docs.
  { methods: ['GET', 'HEAD'], path: /^\/$/ },
  // Each generic CRUD domain's ping.
  { methods: ['GET', 'HEAD'], path: /^\/api\/v1\/[a-z][a-z0-9-]*\/ping\/?$/ },
  // Creating an identity (signing up) is open; every other identity route needs a token.
  { methods: ['POST'], path: /^\/api\/v1\/identity\/?$/ },
  // Introspection authenticates its callers itself: with an API key (HTTP Basic or client_secret,
  // no bearer token to show the edge) or a bearer token, of an identity holding `introspect`.
  { methods: ['POST'], path: /^\/api\/v1\/sso\/(token|revoke|introspect)\/?$/ },
  { methods: ['GET', 'HEAD'], path: /^\/api\/v1\/sso\/jwks\/?$/ },
  // Sign-in through Google or GitHub: a browser with no token yet goes there and comes back.
  // GET only: a start records an upstream round trip and a callback uses one up, which a HEAD must not do.
  { methods: ['GET'], path: /^\/api\/v1\/sso\/federation\/[^/]+\/(start|callback)\/?$/ },
  // Browser sign-in: a browser brings no bearer token. The pages check what they are sent
  // themselves (the client and redirect URI, the form's anti-forgery value, the ID token hint).
  { methods: ['GET'], path: /^\/api\/v1\/sso\/authorize\/?$/ },
  { methods: ['POST'], path: /^\/api\/v1\/sso\/login\/?$/ },
  { methods: ['GET', 'POST'], path: /^\/api\/v1\/sso\/logout\/?$/ },
  { methods: ['GET', 'HEAD'], path: /^\/\.well-known\/(openid-configuration|oauth-authorization-server)\/?$/ },
];

/** Whether the edge lets `method url` through without a token. */
export function isPublicRequest(method: string, url: string): boolean {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return PUBLIC_ROUTES.some((route) => route.methods.includes(method) && route.path.test(path));
}
