import { createHash, randomUUID } from 'node:crypto';
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
  /** client_credentials: the API_KEY credential; authorization_code: the registered client. */
  clientId?: string;
  /** authorization_code: the scope granted (RFC 9068 §2.2.3), space-separated. */
  scope?: string;
  /** Lifetime; default: the configured access-token TTL. */
  ttlSeconds?: number;
}

/** OpenID Connect Core §2: what an ID token says besides `iss`, `iat` and `exp`. */
export interface IdTokenClaims {
  sub: string;
  /** The client it is for (`aud`). */
  clientId: string;
  /** When the user authenticated (epoch seconds). */
  authTime: number;
  nonce?: string;
  /** The access token issued beside it, hashed into `at_hash` (§3.1.3.6). */
  accessToken: string;
  /** The browser session (`sid`, OpenID Connect Front-Channel Logout §2.1). */
  sid: string;
}

export interface TokenSigner {
  /** Signs an access token for `sub` with exactly `roles`. */
  sign(sub: string, roles: string[], options: SignOptions): Promise<SignedToken>;
  /** Signs an ID token with the same keys; it lives as long as an access token. */
  signIdToken(claims: IdTokenClaims): Promise<string>;
}

/** §3.1.3.6: the left half of the SHA-256 of the access token (ES256 hashes with SHA-256), base64url. */
export const accessTokenHash = (accessToken: string) => createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('base64url');

export function createTokenSigner(options: { keys: KeyService; issuer: string; audience: string; accessTokenTtlSeconds: number }): TokenSigner {
  return {
    sign: async (sub, roles, { sid, clientId, scope, ttlSeconds = options.accessTokenTtlSeconds }) => {
      const { kid, key } = await options.keys.signingKey();
      const now = Math.floor(Date.now() / 1000);
      // RFC 9068 §2.2 claims. `client_id` only where a client is known (an API key, a registered
      // client): the password grant has none, and a made-up id would say one did. `scope` only
      // where one was granted (browser sign-in); otherwise tokens carry roles alone.
      const token = await new SignJWT({ sid, ...(clientId ? { client_id: clientId } : {}), ...(scope ? { scope } : {}), roles })
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
    signIdToken: async ({ sub, clientId, authTime, nonce, accessToken, sid }) => {
      const { kid, key } = await options.keys.signingKey();
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ auth_time: authTime, ...(nonce !== undefined ? { nonce } : {}), at_hash: accessTokenHash(accessToken), sid })
        // `JWT`, never `at+jwt`: an ID token must not pass for an access token anywhere.
        .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid, typ: 'JWT' })
        .setIssuer(options.issuer)
        .setAudience(clientId)
        .setSubject(sub)
        .setIssuedAt(now)
        .setExpirationTime(now + options.accessTokenTtlSeconds)
        .sign(key);
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
