import { accessTokenClaimsSchema, type AccessTokenClaims } from '@app/contracts';
import type { FastifyRequest } from 'fastify';
import { createRemoteJWKSet, customFetch, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { replicaUrls, roundRobin } from '../clients/replicas.js';
import { LRUCache } from 'lru-cache';
import { jwksUrlOf, type SharedConfig } from '../config.js';
import { AppError, isDependencyUnavailable } from '../http/errors.js';
import type { RevocationSet } from './revocations.js';

/** The authenticated caller of a request. */
export interface Principal {
  /** The identity's UUID (`sub`). */
  id: string;
  roles: string[];
  claims: AccessTokenClaims;
}

export interface TokenVerifierOptions {
  /** The token issuer's JWKS; several URLs separated by commas are its replicas, asked in turn. */
  jwksUrl: string;
  issuer: string;
  audience: string;
  /** Accepted clock difference between signer and verifier. */
  clockToleranceSeconds?: number;
  /** Least time between two JWKS fetches caused by unknown `kid`s; bounds what forged tokens can cost. */
  cooldownMs?: number;
  /** Keys are refetched at least this often even when every `kid` is known. */
  cacheMaxAgeMs?: number;
}

/**
 * The verifier options a deployment configures: the token issuer's JWKS, issuer, audience,
 * clock tolerance and JWKS cooldown. Every verifier must use the configured cooldown, because
 * the issuer publishes a new key a delay longer than the cooldown before signing with it.
 */
export function tokenVerifierOptions(config: SharedConfig): TokenVerifierOptions {
  return {
    jwksUrl: jwksUrlOf(config),
    issuer: config.JWT_ISSUER,
    audience: config.JWT_AUDIENCE,
    clockToleranceSeconds: config.JWT_CLOCK_TOLERANCE_SECONDS,
    cooldownMs: config.JWKS_COOLDOWN_SECONDS * 1000,
  };
}

/** Only the token issuer's algorithm. Pinning it rules out `none` and HS256-with-the-public-key forgeries. */
export const ACCESS_TOKEN_ALGORITHMS = ['ES256'];
/** A real access token is well under 2 KB; anything far larger is rejected before parsing. */
const MAX_TOKEN_LENGTH = 8_192;

/** The protection space named in every `WWW-Authenticate` challenge (RFC 6750 §3). */
export const AUTH_REALM = 'api-platform';

/** A bearer token was sent and is not trusted (RFC 6750 §3.1 `invalid_token`). */
export const invalidToken = () =>
  new AppError('PLATFORM_AUTH_INVALID_TOKEN', 401, 'error.invalidToken', {}, {
    'www-authenticate': `Bearer realm="${AUTH_REALM}", error="invalid_token"`,
  });

/**
 * No bearer token was sent (no Authorization header, or another scheme): RFC 6750 §3.1 says
 * the challenge then carries no error code, as the client may not know authentication is needed.
 */
export const missingToken = () =>
  new AppError('PLATFORM_AUTH_INVALID_TOKEN', 401, 'error.invalidToken', {}, { 'www-authenticate': `Bearer realm="${AUTH_REALM}"` });

export const forbidden = () => new AppError('PLATFORM_AUTH_FORBIDDEN', 403, 'error.forbidden');

export interface TokenVerifier {
  /** Verifies a compact JWS access token; rejects with a 401 AppError when it is not trusted. */
  verify(token: string): Promise<Principal>;
  /**
   * What `verify` would answer for a token this verifier accepted before and still remembers,
   * at once, with no promise (the hot path of every authenticated request); undefined when it
   * does not remember the token, which then needs `verify`. Throws as `verify` rejects (a
   * revoked token). Verifiers that remember nothing leave it out.
   */
  remembered?(token: string): Principal | undefined;
}

/** The token issuer's JWKS over HTTP, cached, refetched on an unknown `kid` at most once per cooldown. */
function remoteKeySet(options: TokenVerifierOptions): JWTVerifyGetKey {
  const urls = replicaUrls(options.jwksUrl);
  const replicas = urls.length > 1 ? roundRobin(urls) : undefined;
  return createRemoteJWKSet(new URL(urls[0]!), {
    cooldownDuration: options.cooldownMs ?? 30_000,
    cacheMaxAge: options.cacheMaxAgeMs ?? 600_000,
    timeoutDuration: 5_000,
    // The issuer's replicas serve one key set: any reachable one answers for all.
    ...(replicas && { [customFetch]: (_url: string, init: RequestInit) => replicas((url) => fetch(url, init)) }),
  });
}

/**
 * Verifies the platform's access tokens against its JWKS (cached; refetched on an unknown `kid` at
 * most once per cooldown). Requires `exp`, checks `iss` and `aud`, pins ES256, and never
 * trusts keys named by the token itself (`jku`, `x5u`, embedded `jwk`).
 */
export function createTokenVerifier(options: TokenVerifierOptions, keys?: JWTVerifyGetKey): TokenVerifier {
  const jwks = keys ?? remoteKeySet(options);
  return {
    verify: async (token) => {
      if (token.length > MAX_TOKEN_LENGTH) throw invalidToken();
      try {
        const { payload } = await jwtVerify(token, jwks, {
          issuer: options.issuer,
          audience: options.audience,
          algorithms: ACCESS_TOKEN_ALGORITHMS,
          clockTolerance: options.clockToleranceSeconds ?? 30,
          requiredClaims: ['exp', 'iat', 'sub', 'jti'],
        });
        const claims = accessTokenClaimsSchema.parse(payload);
        // jose checks `iat` against the clock only with maxTokenAge: a token from the future is forged or from a broken clock.
        if (claims.iat > Date.now() / 1000 + (options.clockToleranceSeconds ?? 30)) throw invalidToken();
        return { id: claims.sub, roles: claims.roles, claims };
      } catch (error) {
        // Keys that cannot be read now (the issuer's key table with the database down, its JWKS
        // unreachable) say nothing about the token: 503 and retry, never a 401.
        if (isDependencyUnavailable(error)) throw error;
        throw invalidToken();
      }
    },
  };
}

/**
 * Remembers tokens `verifier` accepted until their `exp` (never longer), so a hot path pays
 * for one signature check per token instead of one per request. Bounded: the least recently
 * used entry goes first. Rejections are not remembered: forged tokens would fill the cache.
 * Every answer, cached or not, is then checked against `revocations` (when given): a revoked
 * token is refused from the moment the set knows, whatever the cache holds. A token is never
 * accepted past its `exp` here, even within the clock tolerance.
 */
export function cachingTokenVerifier(verifier: TokenVerifier, options: { maxEntries: number; revocations?: RevocationSet }): TokenVerifier {
  const { revocations } = options;
  if (options.maxEntries === 0) {
    if (!revocations) return verifier;
    return {
      verify: async (token) => {
        const principal = await verifier.verify(token);
        if (revocations.isRevoked(principal.claims)) throw invalidToken();
        return principal;
      },
    };
  }
  // Keyed by the token's signature (its last segment: 86 characters for ES256) rather than the
  // whole token: each request's header is a new string, whose hash V8 computes on lookup, and
  // the token is ~8 times longer. A hit still compares the whole token, so a forged token that
  // reuses a remembered signature is a miss and goes to the verifier, which refuses it.
  const verified = new LRUCache<string, { token: string; principal: Principal }>({ max: options.maxEntries });
  const keyOf = (token: string) => token.slice(token.lastIndexOf('.') + 1);
  const checked = (principal: Principal) => {
    if (revocations?.isRevoked(principal.claims)) throw invalidToken();
    return principal;
  };
  const remembered = (token: string) => {
    const entry = verified.get(keyOf(token));
    return entry !== undefined && entry.token === token ? checked(entry.principal) : undefined;
  };
  return {
    remembered,
    verify: async (token) => {
      const known = remembered(token);
      if (known) return known;
      const principal = await verifier.verify(token);
      const ttlMs = principal.claims.exp * 1000 - Date.now();
      if (ttlMs > 0) verified.set(keyOf(token), { token, principal }, { ttl: ttlMs });
      return checked(principal);
    },
  };
}

/** The bearer token of a request, or undefined. */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer ([A-Za-z0-9\-_.~+/]+=*)$/i.exec(header.trim());
  return match?.[1];
}


/**
 * The verifier a deployment uses, one per process, at the edge and in every service: the issuer's
 * keys, and verified tokens remembered until their `exp` (VERIFIED_TOKEN_CACHE_MAX), so a hot
 * path pays for one signature check per token, then checked against the process's revocations
 * (see revocations.ts). Where the issuer runs in the same process, `localKeys`
 * hands over its key table and no JWKS is ever fetched; elsewhere its JWKS is fetched (on
 * first use, then per its cache and cooldown).
 */
export function accessTokenVerifier(
  config: SharedConfig,
  localKeys?: () => JWTVerifyGetKey | undefined,
  revocations?: RevocationSet,
): TokenVerifier {
  const options = tokenVerifierOptions(config);
  let remote: JWTVerifyGetKey | undefined;
  const keys: JWTVerifyGetKey = (header, token) => {
    const local = localKeys?.();
    if (local) return local(header, token);
    remote ??= remoteKeySet(options);
    return remote(header, token);
  };
  return cachingTokenVerifier(createTokenVerifier(options, keys), { maxEntries: config.VERIFIED_TOKEN_CACHE_MAX, revocations });
}

/** The nil UUID: the subject of in-process calls between services, which no identity has. */
const SYSTEM_SUBJECT = '00000000-0000-0000-0000-000000000000';

/**
 * The caller of an in-process call from another service of the same process (the all-in-one):
 * trusted as `system`, exactly as the same call over HTTP carries the issuer's system token.
 */
export function systemPrincipal(service: string): Principal {
  const now = Math.floor(Date.now() / 1000);
  return {
    id: SYSTEM_SUBJECT,
    roles: ['system'],
    claims: { iss: 'in-process', aud: service, sub: SYSTEM_SUBJECT, iat: now, exp: now, jti: `in-process:${service}`, roles: ['system'] },
  };
}
