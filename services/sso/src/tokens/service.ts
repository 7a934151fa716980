import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { UpstreamError, type CredentialsClient, type IdentityClient } from '@app/contracts';
import type { Logger, TokenVerifier } from '@app/platform';
import {
  invalidClient,
  invalidCredentials,
  invalidRefreshToken,
  invalidRequest,
  OAuthError,
  tooManyAttempts,
  upstreamUnavailable,
} from './errors.js';
import type { RefreshTokenRepository } from './repository.js';
import type { Revoker } from './revocations.js';
import {
  clientCredentialsGrantSchema,
  passwordGrantSchema,
  refreshGrantSchema,
  type ClientCredentialsGrant,
  type PasswordGrant,
  type RefreshGrant,
  type TokenResponse,
} from './schemas.js';
import type { TokenSigner } from './signer.js';
import type { LoginThrottle } from './throttle.js';

export const GRANT_TYPES = ['password', 'refresh_token', 'client_credentials'] as const;

/** The nil UUID: no identity has it, so a password check against it always fails (in full time). */
const NO_IDENTITY = '00000000-0000-0000-0000-000000000000';

/** 256 random bits: a refresh token cannot be guessed, so one SHA-256 (no salt, no stretching) is a safe lookup key. */
const REFRESH_TOKEN_BYTES = 32;

/** Every `sid` sso issues is a UUID (a family id, or one grant's). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const hashRefreshToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** The HTTP-level facts a grant needs besides its parameters. */
export interface GrantContext {
  clientAddress: string;
  /** Client id and secret from an `Authorization: Basic` header (RFC 6749 §2.3.1), when sent. */
  basic?: { clientId: string; clientSecret: string };
}

export interface TokenService {
  grant(body: Record<string, unknown>, context: GrantContext): Promise<TokenResponse>;
  /**
   * RFC 7009: ends the sign-in a refresh or access token belongs to (its refresh tokens and
   * its access tokens); unknown, expired or already revoked tokens are not an error.
   */
  revoke(token: string): Promise<void>;
}

export interface TokenServiceOptions {
  repository: RefreshTokenRepository;
  revoker: Revoker;
  /** Verifies access tokens handed to the revocation endpoint (sso's keys, this process's revocations). */
  verifier: TokenVerifier;
  signer: TokenSigner;
  identities: IdentityClient;
  credentials: CredentialsClient;
  throttle: LoginThrottle;
  logger: Logger;
  refreshTokenTtlSeconds: number;
}

/** The one way a request's parameters become a grant: the wrong shape is `invalid_request`. */
function parse<T>(schema: { safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[] }[] } } }, body: unknown): T {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const names = [...new Set(result.error.issues.map((issue) => String(issue.path[0] ?? 'body')))];
  throw invalidRequest(`Missing or invalid parameter: ${names.join(', ')}.`);
}

export function createTokenService(options: TokenServiceOptions): TokenService {
  const { repository, revoker, verifier, signer, identities, credentials, throttle, logger } = options;

  /** Upstream failures say nothing about the caller's credentials: 503, never invalid_grant. */
  const upstreamCall = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof UpstreamError) {
        logger.error({ err: error }, 'token request failed: an upstream service did not answer');
        throw upstreamUnavailable();
      }
      throw error;
    }
  };

  /** A sign-in: the refresh-token family, whose id is every access token's `sid`, and the credential it used. */
  interface Session {
    familyId: string;
    credentialId: string | null;
  }

  const issueRefreshToken = async (identityId: string, session: Session) => {
    const token = randomBytes(REFRESH_TOKEN_BYTES).toString('base64url');
    await repository.insert({
      id: randomUUID(),
      tokenHash: hashRefreshToken(token),
      familyId: session.familyId,
      identityId,
      credentialId: session.credentialId,
      expiresAt: new Date(Date.now() + options.refreshTokenTtlSeconds * 1000),
    });
    return token;
  };

  const tokensFor = async (identityId: string, roles: string[], session: Session): Promise<TokenResponse> => {
    const access = await signer.sign(identityId, roles, { sid: session.familyId });
    const refreshToken = await issueRefreshToken(identityId, session);
    return { access_token: access.token, token_type: 'Bearer', expires_in: access.expiresIn, refresh_token: refreshToken };
  };

  const passwordGrant = async (grant: PasswordGrant, context: GrantContext) => {
    const retryAfter = await throttle.blocked(context.clientAddress, grant.username);
    if (retryAfter !== undefined) throw tooManyAttempts(retryAfter);
    // identity is read once; for an unknown email, credentials verifies a dummy hash against
    // an id nobody has: the same answer in the same time.
    const identity = await upstreamCall(() => identities.lookup({ email: grant.username }));
    const verdict = await upstreamCall(() => credentials.verifyPassword({ identityId: identity?.id ?? NO_IDENTITY, password: grant.password }));
    if (!identity || !verdict.valid) {
      await throttle.recordFailure(context.clientAddress, grant.username);
      throw invalidCredentials();
    }
    if (!identity.activated) throw invalidCredentials();
    await throttle.recordSuccess(context.clientAddress, grant.username);
    return tokensFor(identity.id, identity.roles, { familyId: randomUUID(), credentialId: verdict.credentialId ?? null });
  };

  const refreshGrant = async (grant: RefreshGrant) => {
    const hash = hashRefreshToken(grant.refresh_token);
    const claimed = await repository.claim(hash, new Date());
    if (!claimed) {
      const spent = await repository.spentFamily(hash);
      if (spent) {
        // A spent token came back: it was stolen, or its owner's copy was. Either way, every
        // token descending from that sign-in, access tokens included, is now untrusted.
        const revoked = await revoker.endSessions({ familyId: spent }, [spent]);
        logger.warn({ familyId: spent, revoked }, 'refresh token reused; its family is revoked');
      }
      throw invalidRefreshToken();
    }
    const identity = await upstreamCall(() => identities.lookup({ id: claimed.identityId }));
    if (!identity || !identity.activated) {
      await revoker.endSessions({ familyId: claimed.familyId }, [claimed.familyId]);
      throw invalidRefreshToken();
    }
    // Roles come from identity now, not from the sign-in: a revoked admin role ends at the next refresh.
    return tokensFor(identity.id, identity.roles, { familyId: claimed.familyId, credentialId: claimed.credentialId });
  };

  /** RFC 6749 §2.3.1: HTTP Basic or `client_secret` in the body, never both. */
  const clientCredentialsGrant = async (grant: ClientCredentialsGrant, context: GrantContext): Promise<TokenResponse> => {
    if (context.basic && (grant.client_secret !== undefined || grant.client_id !== undefined)) {
      throw invalidRequest('Authenticate the client with HTTP Basic or with client_secret in the body, not both.');
    }
    const clientId = context.basic?.clientId || grant.client_id;
    const secret = context.basic?.clientSecret ?? grant.client_secret;
    if (!secret) throw invalidClient();
    const retryAfter = await throttle.blocked(context.clientAddress);
    if (retryAfter !== undefined) throw tooManyAttempts(retryAfter);
    const verdict = await upstreamCall(() => credentials.verifyApiKey(secret));
    const matchesClientId = !clientId || clientId === verdict.credentialId || clientId === verdict.identityId;
    if (!verdict.valid || !verdict.identityId || !verdict.credentialId || !matchesClientId) {
      await throttle.recordFailure(context.clientAddress);
      throw invalidClient();
    }
    // Exactly the identity's roles: an API key never grants more than its identity holds.
    const access = await signer.sign(verdict.identityId, verdict.roles ?? [], { sid: randomUUID(), clientId: verdict.credentialId });
    return { access_token: access.token, token_type: 'Bearer', expires_in: access.expiresIn };
  };

  return {
    grant: async (body, context) => {
      const grantType = body.grant_type;
      if (typeof grantType !== 'string' || grantType === '') throw invalidRequest('Missing or invalid parameter: grant_type.');
      switch (grantType) {
        case 'password':
          return passwordGrant(parse(passwordGrantSchema, body), context);
        case 'refresh_token':
          return refreshGrant(parse(refreshGrantSchema, body));
        case 'client_credentials':
          return clientCredentialsGrant(parse(clientCredentialsGrantSchema, body), context);
        default:
          throw new OAuthError('unsupported_grant_type', `grant_type must be one of: ${GRANT_TYPES.join(', ')}.`);
      }
    },

    revoke: async (token) => {
      const familyId = await repository.familyOf(hashRefreshToken(token));
      if (familyId) {
        await revoker.endSessions({ familyId }, [familyId]);
        return;
      }
      // Not a refresh token: an access token of ours ends its sign-in; anything else is nothing to revoke.
      const sid = await verifier.verify(token).then(
        (principal) => principal.claims.sid,
        () => undefined,
      );
      if (sid && UUID.test(sid)) await revoker.endSessions({ familyId: sid }, [sid]);
    },
  };
}
