import type { FastifyRequest } from 'fastify';
import type { App } from '../http/app.js';
import { bearerToken, forbidden, invalidToken, missingToken, type Principal, type TokenVerifier } from './auth.js';

/**
 * Who may call a route, declared once in its options (`config: { auth: ... }`) and enforced
 * by one hook (`registerRouteAuth`) before the body is parsed or validated, so an anonymous
 * caller learns nothing from validation and gets the same 401 on every route.
 * - `public`: anyone; a token, if sent, is not looked at.
 * - `optional`: anyone, but a bearer token that is sent must be valid (it may grant more).
 * - `authenticated`: a valid bearer token.
 * - `{ roles }`: a valid bearer token carrying at least one of these roles (else 403).
 * - `platform`: a token of the platform's own services (the token issuer's system token, subject
 *   `service:<name>`, role `system`), never an identity's, whatever roles an admin gave it:
 *   internal routes, which the edge never routes, answer only their peers (else 403).
 * A route that declares nothing is `authenticated`: forgetting is never an open door.
 */
export type RouteAuth = 'public' | 'optional' | 'authenticated' | 'platform' | { roles: readonly string[] };

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: RouteAuth;
    /**
     * A route that passes requests on to another app (an edge's proxies) says here what
     * the route each request reaches there declares: the edge asks it instead of the route's
     * own `auth`. Undefined, a route nobody declared, needs a token.
     */
    forwardedAuth?: (method: string, url: string) => RouteAuth | undefined;
  }
  interface FastifyRequest {
    /** The verified caller; set before validation on every route that is not `public`. */
    principal?: Principal;
  }
}

export interface RouteAuthOptions {
  verifier: TokenVerifier;
  /**
   * Also act as the edge (a process in front of the others, or one that runs them all and is its own edge): a request
   * needs a valid token unless the route it reaches declares itself `public` or `optional`
   * (for a proxied request, the route of the service behind: `forwardedAuth`). A path no
   * route matches needs one too, so the edge never reveals what exists.
   */
  edge: boolean;
}

/** How a bearer token is sent (RFC 6750 §2.1), in the form clients use. */
const BEARER_PREFIX = 'Bearer ';

/** What the route a request reaches declares, as the edge sees it: undefined when no route matches. */
function edgeAuthOf(request: FastifyRequest): RouteAuth | undefined {
  if (request.is404) return undefined;
  const { auth, forwardedAuth } = request.routeOptions.config;
  return forwardedAuth ? forwardedAuth(request.method, request.url) : auth;
}

/** Whether the edge lets a request to a route declaring `auth` through without a token. */
const openAtEdge = (auth: RouteAuth | undefined) => auth === 'public' || auth === 'optional';

/** Adds the one hook that enforces every route's `auth` (and, at the edge, wants a token for every route not declared open). */
export function registerRouteAuth(app: App, options: RouteAuthOptions): void {
  const { verifier, edge } = options;
  app.decorateRequest('principal', undefined);
  // Callback style, as every hook on every request: a token the verifier remembers (the
  // common case: a client sends the same token until it expires) is settled at once, with
  // no promise; only a token to verify waits for the verifier.
  app.addHook('onRequest', (request, _reply, done) => {
    const declared = request.routeOptions.config.auth;
    // No route matched: a service answers its 404; the edge still wants a token.
    const policy: RouteAuth = declared ?? (request.is404 ? 'public' : 'authenticated');
    const edgeWantsToken = edge && request.method !== 'OPTIONS' && !openAtEdge(edgeAuthOf(request));
    const header = request.headers.authorization;
    if (!edgeWantsToken && (policy === 'public' || (policy === 'optional' && header === undefined))) return done();
    const admit = (principal: Principal) => {
      request.principal = principal;
      if (typeof policy === 'object' && !policy.roles.some((role) => principal.roles.includes(role))) return done(forbidden());
      if (policy === 'platform' && !isPlatformService(principal)) return done(forbidden());
      done();
    };
    let known: Principal | undefined;
    try {
      // Only the exact form a remembered token came in (`Bearer <token>`) is looked up here:
      // anything else (other spacing or case) takes the full parse below.
      known = header !== undefined && header.startsWith(BEARER_PREFIX) ? verifier.remembered?.(header.slice(BEARER_PREFIX.length)) : undefined;
    } catch (error) {
      return done(error as Error);
    }
    if (known) return admit(known);
    const token = bearerToken(request);
    if (!token) return done(/^\s*Bearer(\s|$)/i.test(header ?? '') ? invalidToken() : missingToken());
    verifier.verify(token).then(admit, done);
  });
}

/** The verified caller of a route that is not `public`. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw invalidToken();
  return request.principal;
}

/** The subjects of the platform's own service tokens: no identity has one (identities are UUIDs). */
export const PLATFORM_SERVICE_SUBJECT_PREFIX = 'service:';

/** A token the issuer minted for one of the platform's services, not for an identity. */
export const isPlatformService = (principal: Principal): boolean =>
  principal.id.startsWith(PLATFORM_SERVICE_SUBJECT_PREFIX) && principal.roles.includes('system');

/** Admins: the only callers who change roles and activation (a `system` token does not). */
export const isAdmin = (principal: Principal): boolean => principal.roles.includes('admin');

/** Callers who may act on anyone's resources: admins, and other services (`system`). */
export const isPrivileged = (principal: Principal): boolean => principal.roles.includes('admin') || principal.roles.includes('system');

/** The one ownership rule: the caller may act on `identityId`'s resources if it is that identity or privileged. */
export function isOwnerOrAdmin(principal: Principal, identityId: string): boolean {
  return principal.id === identityId || isPrivileged(principal);
}

/**
 * Declares `auth` for every route registered on `scope` from now on that declares none
 * itself: routes a plugin makes (a proxy, the docs UI) where no route option can be passed.
 * A route's own declaration always wins, so this can never open a protected route.
 */
export function declareAuth(scope: App, auth: RouteAuth): void {
  scope.addHook('onRoute', (route) => {
    route.config = { ...route.config, auth: route.config?.auth ?? auth };
  });
}
