import { createHash, randomUUID } from 'node:crypto';
import { UpstreamError, type IdentityClient } from '@app/contracts';
import type { Logger } from '@app/platform';
import { z } from 'zod';
import type { StoredClient } from '../clients/repository.js';
import type { ClientService } from '../clients/service.js';
import { invalidClient, invalidRequest, OAuthError, upstreamUnavailable } from '../tokens/errors.js';
import type { Revoker } from '../tokens/revocations.js';
import type { AuthorizationCodeGrant, GrantContext } from '../tokens/service.js';
import type { TokenSigner } from '../tokens/signer.js';
import { sha256 } from './cookies.js';
import type { BrowserSignInRepository } from './repository.js';

/** RFC 7636 §4.1: 43 to 128 unreserved characters. */
const codeGrantSchema = z.object({
  grant_type: z.literal('authorization_code'),
  code: z.string().min(1).max(512),
  redirect_uri: z.string().min(1).max(2048),
  code_verifier: z.string().regex(/^[A-Za-z0-9._~-]{43,128}$/),
  client_id: z.string().min(1).max(512).optional(),
  client_secret: z.string().min(1).max(512).optional(),
});

/** One answer for every code that cannot be redeemed: unknown, expired, used, or bound to another client, URI or verifier. */
const invalidCode = () => new OAuthError('invalid_grant', 'The authorization code is invalid, expired, already used, or was issued for another client, redirect_uri or code_verifier.');

/** RFC 7636 §4.6: S256 is the base64url SHA-256 of the verifier. */
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export interface CodeGrantOptions {
  clients: ClientService;
  repository: BrowserSignInRepository;
  identities: IdentityClient;
  signer: TokenSigner;
  revoker: Revoker;
  logger: Logger;
}

/**
 * The token endpoint's `authorization_code` grant (RFC 6749 §4.1.3, RFC 7636 §4.6, OpenID
 * Connect Core §3.1.3): the client authenticates (a confidential one with its secret, a public
 * one by its id alone), the code is redeemed once, for the redirect URI and verifier it was
 * issued for, and the answer carries an ID token when `openid` was granted and a refresh token
 * with `offline_access`.
 */
export function createAuthorizationCodeGrant(options: CodeGrantOptions): AuthorizationCodeGrant {
  const { clients, repository, identities, signer, revoker, logger } = options;

  /** RFC 6749 §2.3.1 and §3.2.1: HTTP Basic or the body, never both; a public client sends its id only. */
  const authenticate = async (parameters: { client_id?: unknown; client_secret?: unknown }, context: GrantContext): Promise<StoredClient> => {
    const { client_id: bodyId, client_secret: bodySecret } = parameters;
    if ((bodyId !== undefined && typeof bodyId !== 'string') || (bodySecret !== undefined && typeof bodySecret !== 'string')) {
      throw invalidRequest('Missing or invalid parameter: client_id, client_secret.');
    }
    if (context.basic && (bodySecret !== undefined || (bodyId !== undefined && bodyId !== context.basic.clientId))) {
      throw invalidRequest('Authenticate the client with HTTP Basic or with client_id and client_secret in the body, not both.');
    }
    const clientId = context.basic?.clientId ?? bodyId;
    const secret = context.basic?.clientSecret ?? bodySecret;
    if (!clientId) throw invalidClient();
    const client = await clients.find(clientId);
    if (!client) throw invalidClient();
    if (client.type === 'confidential' ? !secret || !clients.secretMatches(client, secret) : secret) throw invalidClient();
    return client;
  };

  return {
    isClient: async (clientId, body, context) => {
      const client = await authenticate(body, context).catch((error: unknown) => {
        if (error instanceof OAuthError) return undefined;
        throw error;
      });
      return client?.id === clientId && client.grantTypes.includes('refresh_token');
    },

    exchange: async (body, context, issue) => {
      const parsed = codeGrantSchema.safeParse(body);
      if (!parsed.success) {
        const names = [...new Set(parsed.error.issues.map((issue) => String(issue.path[0] ?? 'body')))];
        throw invalidRequest(`Missing or invalid parameter: ${names.join(', ')}.`);
      }
      const grant = parsed.data;
      const client = await authenticate(grant, context);
      if (!client.grantTypes.includes('authorization_code')) throw new OAuthError('unauthorized_client', 'This client may not use the authorization code grant.');
      const codeHash = sha256(grant.code);
      const familyId = randomUUID();
      const redeemed = await repository.redeemCode(codeHash, new Date(), { clientId: client.id, redirectUri: grant.redirect_uri, codeChallenge: s256(grant.code_verifier) }, familyId);
      if (!redeemed) {
        const spent = await repository.familyOfSpentCode(codeHash);
        if (spent) {
          // RFC 6749 §4.1.2: a code used twice was intercepted; whatever it bought is revoked.
          const revoked = await revoker.endSessions({ familyId: spent }, [spent]);
          logger.warn({ familyId: spent, revoked, clientId: client.id }, 'authorization code reused; the tokens issued from it are revoked');
        }
        throw invalidCode();
      }
      const identity = await identities.lookup({ id: redeemed.identityId }).catch((error: unknown) => {
        if (error instanceof UpstreamError) throw upstreamUnavailable();
        throw error;
      });
      if (!identity || !identity.activated) throw invalidCode();
      const scopes = redeemed.scope.split(' ');
      const tokens = await issue({
        identityId: identity.id,
        roles: identity.roles,
        familyId: redeemed.familyId,
        credentialId: redeemed.credentialId,
        clientId: client.id,
        scope: redeemed.scope,
        refresh: scopes.includes('offline_access') && client.grantTypes.includes('refresh_token'),
      });
      if (!scopes.includes('openid')) return { ...tokens, scope: redeemed.scope };
      const idToken = await signer.signIdToken({
        sub: identity.id,
        clientId: client.id,
        authTime: Math.floor(redeemed.authTime.getTime() / 1000),
        ...(redeemed.nonce !== null && { nonce: redeemed.nonce }),
        accessToken: tokens.access_token,
        sid: redeemed.sessionId,
      });
      return { ...tokens, scope: redeemed.scope, id_token: idToken };
    },
  };
}
