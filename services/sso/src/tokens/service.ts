import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { UpstreamError, type CredentialsClient, type IdentityClient } from '@app/contracts';
import { isUuid, type Logger, type TokenVerifier } from '@app/platform';
import {
  invalidClient,
  invalidCredentials,
  invalidRefreshToken,
  invalidRequest,
  OAuthError,
  tooManyAttempts,
  upstreamUnavailable,
} from './errors.js';
import { FIRST_PARTY_CLIENT_ID } from '../clients/first-party.js';
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
import { tokenMetrics } from './metrics.js';

export const GRANT_TYPES = ['authorization_code', 'password', 'refresh_token', 'client_credentials'] as const;

/** The nil UUID: no identity has it, so a password check against it always fails (in full time). */
const NO_IDENTITY = '00000000-0000-0000-0000-000000000000';

/** 256 random bits: a refresh token cannot be guessed, so one SHA-256 (no salt, no stretching) is a safe lookup key. */
const REFRESH_TOKEN_BYTES = 32;

export const hashRefreshToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** The HTTP-level facts a grant needs besides its parameters. */
export interface GrantContext {
  clientAddress: string;
  /** Client id and secret from an `Authorization: Basic` header (RFC 6749 §2.3.1), when sent. */
  basic?: { clientId: string; clientSecret: string };
}

/** A client that proved it holds an API key: the key's credential, its identity and that identity's roles. */
export interface AuthenticatedClient {
  identityId: string;
  credentialId: string;
  roles: string[];
}

/** RFC 7662 §2.2: what an introspection says of a token; an inactive one says nothing else. */
export type Introspection =
  | { active: false }
  | {
      active: true;
      token_type?: 'Bearer';
      iss: string;
      aud?: string | string[];
      sub: string;
      iat: number;
      exp: number;
      jti?: string;
      sid?: string;
      client_id?: string;
      roles?: string[];
    };

const INACTIVE: Introspection = { active: false };
/** Longer than any token sso issues (an access token is well under 2 KB): inactive without a look. */
const MAX_INTROSPECTED_TOKEN_LENGTH = 8_192;

export interface TokenService {
  /** Checks a client's API key (HTTP Basic or `client_secret`), or throws `invalid_client`. */
  authenticateClient(body: { client_id?: string; client_secret?: string }, context: GrantContext): Promise<AuthenticatedClient>;
  /**
   * RFC 7662: whether `token` is one of ours and usable now. Access tokens go through the
   * process's verifier (its verified-token cache, then its revocation set); refresh tokens are
   * looked up. Revoked, expired, used and unknown tokens are all just `{ active: false }`.
   */
  introspect(token: string): Promise<Introspection>;
  grant(body: Record<string, unknown>, context: GrantContext): Promise<TokenResponse>;
  /**
   * RFC 7009: ends the sign-in a refresh or access token belongs to (its refresh tokens and
   * its access tokens), when the request comes from the client it was issued to (§2.1);
   * unknown, expired, already revoked and other clients' tokens change nothing and are not an
   * error (§2.2). Client credentials that fail are `invalid_client` (§2.2.1), before the token
   * is looked at.
   */
  revoke(token: string, body: { client_id?: unknown; client_secret?: unknown }, context: GrantContext): Promise<void>;
}

/** What a grant that signed someone in asks the token service to issue. */
export interface IssueRequest {
  identityId: string;
  roles: string[];
  /** The sign-in: every token's `sid`, the refresh tokens' family. */
  familyId: string;
  credentialId: string | null;
  /** The registered client and the scope granted (browser sign-in). */
  clientId?: string;
  scope?: string;
  /** Whether a refresh token comes too. */
  refresh: boolean;
}

/** Issues an access token (and a refresh token when asked) for a sign-in another grant established. */
export type IssueTokens = (request: IssueRequest) => Promise<TokenResponse>;

/** The authorization_code grant, built beside the hosted login page that hands out the codes (browser/). */
export interface AuthorizationCodeGrant {
  exchange(body: Record<string, unknown>, context: GrantContext, issue: IssueTokens): Promise<TokenResponse>;
  /**
   * Whether the request authenticates as the registered client `clientId` (RFC 6749 §6: a
   * confidential client refreshing its tokens proves it holds its secret; a public client
   * that names itself names the right client).
   */
  isClient(clientId: string, body: Record<string, unknown>, context: GrantContext): Promise<boolean>;
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
  /** `iss` of the tokens sso signs, said of its refresh tokens by introspection. */
  issuer: string;
  /** Redeems the hosted login page's codes; without it the grant is unsupported. */
  authorizationCode?: AuthorizationCodeGrant;
  /** Authenticates a registered client that names itself on a password grant; without it none can. */
  registeredClient?: (parameters: { client_id?: unknown; client_secret?: unknown }, context: GrantContext) => Promise<RegisteredClient>;
}

/** What the password grant needs to know of a registered client. */
export interface RegisteredClient {
  id: string;
  grantTypes: readonly string[];
  scopes: readonly string[];
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

  /** A new refresh token: the value for the client, its hash and expiry for the table. */
  const mintRefreshToken = () => {
    const token = randomBytes(REFRESH_TOKEN_BYTES).toString('base64url');
    return { token, tokenHash: hashRefreshToken(token), expiresAt: new Date(Date.now() + options.refreshTokenTtlSeconds * 1000) };
  };

  const issueRefreshToken = async (identityId: string, session: Session, client: { clientId?: string; scope?: string } = {}) => {
    const { token, tokenHash, expiresAt } = mintRefreshToken();
    await repository.insert({ id: randomUUID(), tokenHash, familyId: session.familyId, identityId, credentialId: session.credentialId, ...client, expiresAt });
    return token;
  };

  const issue: IssueTokens = async ({ identityId, roles, familyId, credentialId, clientId, scope, refresh }) => {
    const access = await signer.sign(identityId, roles, { sid: familyId, clientId, scope });
    const refreshToken = refresh ? await issueRefreshToken(identityId, { familyId, credentialId }, { clientId, scope }) : undefined;
    return { access_token: access.token, token_type: 'Bearer', expires_in: access.expiresIn, ...(refreshToken !== undefined && { refresh_token: refreshToken }) };
  };

  /**
   * The registered client a password grant names (RFC 6749 §4.3.2), when it names one: it must
   * authenticate as it would for its other grants and hold the password grant, and the scope
   * it asks for must be among its own. Its tokens say `client_id` (RFC 9068 §2.2) and `scope`.
   */
  const passwordClient = async (grant: PasswordGrant, context: GrantContext) => {
    if (!options.registeredClient) return undefined;
    // Naming no client is signing in with the platform's own (first-party.ts).
    const named = grant.client_id !== undefined || context.basic !== undefined;
    const client = await options.registeredClient(named ? grant : { client_id: FIRST_PARTY_CLIENT_ID }, context).catch((error: unknown) => {
      if (!named && error instanceof OAuthError && error.error === 'invalid_client') {
        throw invalidClient('The password grant needs a registered client here: send client_id (and its secret when it has one).');
      }
      throw error;
    });
    if (!client.grantTypes.includes('password')) throw new OAuthError('unauthorized_client', 'This client may not use the password grant.');
    const asked = [...new Set((grant.scope ?? '').split(' ').filter(Boolean))];
    const refused = asked.filter((scope) => !client.scopes.includes(scope));
    if (refused.length > 0) throw new OAuthError('invalid_scope', `This client may not ask for: ${refused.join(', ')}.`);
    return { client, scope: asked.length > 0 ? asked.join(' ') : undefined };
  };

  const passwordGrant = async (grant: PasswordGrant, context: GrantContext) => {
    const retryAfter = await throttle.blocked(context.clientAddress, grant.username);
    if (retryAfter !== undefined) {
      tokenMetrics.throttled('password');
      throw tooManyAttempts(retryAfter);
    }
    const named = await passwordClient(grant, context);
    // identity is read once; for an unknown email, credentials verifies a dummy hash against
    // an id nobody has: the same answer in the same time.
    const identity = await upstreamCall(() => identities.lookup({ email: grant.username }));
    const verdict = await upstreamCall(() => credentials.verifyPassword({ identityId: identity?.id ?? NO_IDENTITY, password: grant.password }));
    if (!identity || !verdict.valid) {
      await throttle.recordFailure(context.clientAddress, grant.username);
      tokenMetrics.failedLogin('password');
      throw invalidCredentials();
    }
    if (!identity.activated) {
      tokenMetrics.failedLogin('password');
      throw invalidCredentials();
    }
    await throttle.recordSuccess(context.clientAddress, grant.username);
    return issue({
      identityId: identity.id,
      roles: identity.roles,
      familyId: randomUUID(),
      credentialId: verdict.credentialId ?? null,
      ...(named && { clientId: named.client.id, scope: named.scope }),
      // A registered client gets a refresh token only where it may use one.
      refresh: named ? named.client.grantTypes.includes('refresh_token') : true,
    });
  };

  const refreshGrant = async (grant: RefreshGrant, body: Record<string, unknown>, context: GrantContext) => {
    const hash = hashRefreshToken(grant.refresh_token);
    // The successor is issued with the claim, in one statement; if the identity turns out to be
    // gone, ending the family below revokes it with the rest.
    const next = mintRefreshToken();
    const claimed = await repository.rotate(hash, new Date(), { id: randomUUID(), tokenHash: next.tokenHash, expiresAt: next.expiresAt });
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
    // The first-party client was never named by its users: their refreshes need not name it either.
    if (claimed.clientId && claimed.clientId !== FIRST_PARTY_CLIENT_ID && !(await options.authorizationCode?.isClient(claimed.clientId, body, context))) {
      // A registered client's token shown without that client's proof: whoever holds it stole
      // it (the client itself always authenticates), so its sign-in ends here.
      await revoker.endSessions({ familyId: claimed.familyId }, [claimed.familyId]);
      throw invalidClient();
    }
    const identity = await upstreamCall(() => identities.lookup({ id: claimed.identityId }));
    if (!identity || !identity.activated) {
      await revoker.endSessions({ familyId: claimed.familyId }, [claimed.familyId]);
      throw invalidRefreshToken();
    }
    // Roles come from identity now, not from the sign-in: a revoked admin role ends at the next refresh.
    // A browser sign-in's token keeps naming its client and scope.
    const access = await signer.sign(identity.id, identity.roles, { sid: claimed.familyId, clientId: claimed.clientId ?? undefined, scope: claimed.scope ?? undefined });
    return { access_token: access.token, token_type: 'Bearer' as const, expires_in: access.expiresIn, refresh_token: next.token };
  };

  /**
   * RFC 6749 §2.3.1: an API key with HTTP Basic or as `client_secret` in the body, never both;
   * `client_id`, when sent, must name the key's credential or its identity. Failures count
   * towards the client address's throttle, as failed sign-ins do.
   */
  const authenticateClient = async (body: { client_id?: string; client_secret?: string }, context: GrantContext): Promise<AuthenticatedClient> => {
    if (context.basic && (body.client_secret !== undefined || body.client_id !== undefined)) {
      throw invalidRequest('Authenticate the client with HTTP Basic or with client_secret in the body, not both.');
    }
    const clientId = context.basic?.clientId || body.client_id;
    const secret = context.basic?.clientSecret ?? body.client_secret;
    if (!secret) throw invalidClient();
    const retryAfter = await throttle.blocked(context.clientAddress);
    if (retryAfter !== undefined) {
      tokenMetrics.throttled('client_credentials');
      throw tooManyAttempts(retryAfter);
    }
    const verdict = await upstreamCall(() => credentials.verifyApiKey({ apiKey: secret }));
    const matchesClientId = !clientId || clientId === verdict.credentialId || clientId === verdict.identityId;
    if (!verdict.valid || !verdict.identityId || !verdict.credentialId || !matchesClientId) {
      await throttle.recordFailure(context.clientAddress);
      tokenMetrics.failedLogin('client_credentials');
      throw invalidClient();
    }
    return { identityId: verdict.identityId, credentialId: verdict.credentialId, roles: verdict.roles ?? [] };
  };

  /**
   * RFC 7009 §2.1: who asks to revoke. A request that names no client speaks for the
   * platform's first-party client, as at the token endpoint's password grant. Otherwise a
   * registered client (a public one by its id, a confidential one with its secret) or an API
   * key's credential (as at the token endpoint); credentials that prove neither are
   * `invalid_client`.
   */
  const revocationCaller = async (body: { client_id?: unknown; client_secret?: unknown }, context: GrantContext): Promise<string> => {
    if (body.client_id === undefined && body.client_secret === undefined && !context.basic) return FIRST_PARTY_CLIENT_ID;
    if ((body.client_id !== undefined && typeof body.client_id !== 'string') || (body.client_secret !== undefined && typeof body.client_secret !== 'string')) {
      throw invalidRequest('Missing or invalid parameter: client_id, client_secret.');
    }
    const registered = options.registeredClient
      ? await options.registeredClient(body, context).catch((error: unknown) => {
          if (error instanceof OAuthError && error.error === 'invalid_client') return undefined;
          throw error;
        })
      : undefined;
    if (registered) return registered.id;
    return (await authenticateClient(body as { client_id?: string; client_secret?: string }, context)).credentialId;
  };

  const clientCredentialsGrant = async (grant: ClientCredentialsGrant, context: GrantContext): Promise<TokenResponse> => {
    const client = await authenticateClient(grant, context);
    // Exactly the identity's roles: an API key never grants more than its identity holds.
    const access = await signer.sign(client.identityId, client.roles, { sid: randomUUID(), clientId: client.credentialId });
    return { access_token: access.token, token_type: 'Bearer', expires_in: access.expiresIn };
  };

  const counted = <T>(grantType: (typeof GRANT_TYPES)[number], issued: T): T => {
    tokenMetrics.issued(grantType);
    return issued;
  };

  /** An access token of ours that every verifier accepts now: signed, unexpired (no tolerance here), not revoked. */
  const introspectAccessToken = async (token: string): Promise<Introspection> => {
    const principal = await verifier.verify(token).catch(() => undefined);
    if (!principal || principal.claims.exp * 1000 <= Date.now()) return INACTIVE;
    const { iss, aud, sub, iat, exp, jti, sid, client_id, roles } = principal.claims;
    return { active: true, token_type: 'Bearer', iss, aud, sub, iat, exp, jti, ...(sid && { sid }), ...(client_id && { client_id }), roles };
  };

  const introspectRefreshToken = async (token: string): Promise<Introspection> => {
    const live = await repository.live(hashRefreshToken(token), new Date());
    if (!live) return INACTIVE;
    const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
    return { active: true, iss: options.issuer, sub: live.identityId, iat: seconds(live.createdAt), exp: seconds(live.expiresAt), sid: live.familyId };
  };

  return {
    authenticateClient,

    introspect: (token) =>
      // A compact JWS has dots, a refresh token (base64url) never does: one look, whatever the hint.
      token.length > MAX_INTROSPECTED_TOKEN_LENGTH ? Promise.resolve(INACTIVE) : token.includes('.') ? introspectAccessToken(token) : introspectRefreshToken(token),

    grant: async (body, context) => {
      const grantType = body.grant_type;
      if (typeof grantType !== 'string' || grantType === '') throw invalidRequest('Missing or invalid parameter: grant_type.');
      switch (grantType) {
        case 'authorization_code':
          if (!options.authorizationCode) break;
          return counted('authorization_code', await options.authorizationCode.exchange(body, context, issue));
        case 'password':
          return counted('password', await passwordGrant(parse(passwordGrantSchema, body), context));
        case 'refresh_token':
          return counted('refresh_token', await refreshGrant(parse(refreshGrantSchema, body), body, context));
        case 'client_credentials':
          return counted('client_credentials', await clientCredentialsGrant(parse(clientCredentialsGrantSchema, body), context));
      }
      throw new OAuthError('unsupported_grant_type', `grant_type must be one of: ${GRANT_TYPES.join(', ')}.`);
    },

    revoke: async (token, body, context) => {
      const caller = await revocationCaller(body, context);
      // §2.1: a token issued to a client is that client's to revoke; one issued to none (from
      // before tokens named their client) is its holder's, whoever asks.
      const mayRevoke = (owner: string | null | undefined) => !owner || owner === caller;
      const family = await repository.familyOf(hashRefreshToken(token));
      if (family) {
        if (mayRevoke(family.clientId)) await revoker.endSessions({ familyId: family.familyId }, [family.familyId]);
        return;
      }
      // Not a refresh token: an access token of ours ends its sign-in; anything else is nothing to revoke.
      const claims = await verifier.verify(token).then(
        (principal) => principal.claims,
        () => undefined,
      );
      const sid = claims?.sid;
      if (sid && isUuid(sid) && mayRevoke(claims.client_id)) await revoker.endSessions({ familyId: sid }, [sid]);
    },
  };
}
