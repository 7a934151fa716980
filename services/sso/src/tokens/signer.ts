import { createHash, KeyObject, randomUUID, sign } from 'node:crypto';
import type { CryptoKey } from 'jose';
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

/** The node:crypto key of each signing key, made once: `KeyObject.from` copies the key. */
const keyObjects = new WeakMap<CryptoKey, KeyObject>();
const keyObjectOf = (key: CryptoKey) => {
  let object = keyObjects.get(key);
  if (!object) keyObjects.set(key, (object = KeyObject.from(key as Parameters<typeof KeyObject.from>[0])));
  return object;
};

const base64url = (json: object) => Buffer.from(JSON.stringify(json)).toString('base64url');

/**
 * A JWS in compact serialization (RFC 7515 §7.1) signed with ES256 (RFC 7518 §3.4: ECDSA
 * P-256 over SHA-256, the signature as R and S of 32 bytes each, not DER). jose's SignJWT
 * took a quarter of the token endpoint's main thread (profile of client_credentials), in
 * WebCrypto's bookkeeping around the signature more than in the signature itself. node:crypto's
 * `sign` with a callback signs on libuv's pool as WebCrypto does, without that bookkeeping:
 * client_credentials on one all-in-one went from 4.9-5.2k to 6.0-6.6k grants/s. (Signing
 * synchronously was slower still, 4.2-4.3k/s: the signature then runs on the main thread.)
 * Verification stays with jose.
 */
function compactJws(header: { kid: string; typ: string }, claims: object, key: CryptoKey): Promise<string> {
  const input = `${base64url({ alg: SIGNING_ALGORITHM, ...header })}.${base64url(claims)}`;
  return new Promise((resolve, reject) =>
    sign('sha256', Buffer.from(input), { key: keyObjectOf(key), dsaEncoding: 'ieee-p1363' }, (error, signature) => (error ? reject(error) : resolve(`${input}.${signature.toString('base64url')}`))),
  );
}

export function createTokenSigner(options: { keys: KeyService; issuer: string; audience: string; accessTokenTtlSeconds: number }): TokenSigner {
  return {
    sign: async (sub, roles, { sid, clientId, scope, ttlSeconds = options.accessTokenTtlSeconds }) => {
      const { kid, key } = await options.keys.signingKey();
      const now = Math.floor(Date.now() / 1000);
      // RFC 9068 §2.2 claims. `client_id` only where a client is known (an API key, a registered
      // client): the password grant has none, and a made-up id would say one did. `scope` only
      // where one was granted (browser sign-in); otherwise tokens carry roles alone.
      const claims = { sid, ...(clientId ? { client_id: clientId } : {}), ...(scope ? { scope } : {}), roles };
      // RFC 9068 §2.1: `at+jwt` says "access token", so no other JWT of ours can pass for one.
      const token = await compactJws({ kid, typ: 'at+jwt' }, { ...claims, iss: options.issuer, aud: options.audience, sub, iat: now, exp: now + ttlSeconds, jti: randomUUID() }, key);
      return { token, expiresIn: ttlSeconds };
    },
    signIdToken: async ({ sub, clientId, authTime, nonce, accessToken, sid }) => {
      const { kid, key } = await options.keys.signingKey();
      const now = Math.floor(Date.now() / 1000);
      const claims = { auth_time: authTime, ...(nonce !== undefined ? { nonce } : {}), at_hash: accessTokenHash(accessToken), sid };
      // `JWT`, never `at+jwt`: an ID token must not pass for an access token anywhere.
      return compactJws({ kid, typ: 'JWT' }, { ...claims, iss: options.issuer, aud: clientId, sub, iat: now, exp: now + options.accessTokenTtlSeconds }, key);
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
