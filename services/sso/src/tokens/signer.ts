import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { KeyService } from '../keys/service.js';
import { SIGNING_ALGORITHM } from '../keys/service.js';

export interface SignedToken {
  token: string;
  expiresIn: number;
}

export interface SignOptions {
  /** The sign-in (`sid`): the refresh-token family, or one client_credentials grant. Revoked as one. */
  sid: string;
  /** client_credentials: the API_KEY credential the token is granted to. */
  clientId?: string;
  /** Lifetime; default: the configured access-token TTL. */
  ttlSeconds?: number;
}

export interface TokenSigner {
  /** Signs an access token for `sub` with exactly `roles`. */
  sign(sub: string, roles: string[], options: SignOptions): Promise<SignedToken>;
}

export function createTokenSigner(options: { keys: KeyService; issuer: string; audience: string; accessTokenTtlSeconds: number }): TokenSigner {
  return {
    sign: async (sub, roles, { sid, clientId, ttlSeconds = options.accessTokenTtlSeconds }) => {
      const { kid, key } = await options.keys.signingKey();
      const now = Math.floor(Date.now() / 1000);
      // RFC 9068 §2.2 claims. `client_id` only where a client authenticated (client_credentials): the
      // password and refresh grants have no registered client yet, and a made-up id would say one did.
      // No `scope`: tokens carry roles, and the metadata lists no scopes.
      const token = await new SignJWT({ sid, ...(clientId ? { client_id: clientId } : {}), roles })
        // RFC 9068 §2.1: `at+jwt` says "access token", so no other JWT of ours can pass for one.
        .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid, typ: 'at+jwt' })
        .setIssuer(options.issuer)
        .setAudience(options.audience)
        .setSubject(sub)
        .setIssuedAt(now)
        .setExpirationTime(now + ttlSeconds)
        .setJti(randomUUID())
        .sign(key);
      return { token, expiresIn: ttlSeconds };
    },
  };
}

/** Subject of the tokens sso mints for its own calls to other services. */
export const SSO_SYSTEM_SUBJECT = 'service:sso';
/** A system token lives a minute: long enough for a call, short enough to be worthless when leaked. */
const SYSTEM_TOKEN_TTL_SECONDS = 60;
/** A cached system token is replaced this long before it expires, so no call carries a dying one. */
const SYSTEM_TOKEN_RENEW_SECONDS = 20;

/** sso's own short-lived `system` token for service-to-service calls, reused until it nears expiry. */
export function createSystemTokens(signer: TokenSigner): () => Promise<string> {
  let current: { token: string; renewAt: number } | undefined;
  let pending: Promise<string> | undefined;
  return async () => {
    if (current && Date.now() < current.renewAt) return current.token;
    pending ??= signer
      .sign(SSO_SYSTEM_SUBJECT, ['system'], { sid: randomUUID(), ttlSeconds: SYSTEM_TOKEN_TTL_SECONDS })
      .then(({ token }) => {
        current = { token, renewAt: Date.now() + (SYSTEM_TOKEN_TTL_SECONDS - SYSTEM_TOKEN_RENEW_SECONDS) * 1000 };
        return token;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };
}
