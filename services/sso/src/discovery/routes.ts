import type { App } from '@app/platform';
import { z } from 'zod';
import { JWKS_PATH } from '../keys/routes.js';
import { SIGNING_ALGORITHM } from '../keys/service.js';
import { GRANT_TYPES } from '../tokens/service.js';
import { INTROSPECT_PATH, REVOKE_PATH, TOKEN_PATH } from '../tokens/routes.js';
import { USERINFO_PATH } from '../userinfo/routes.js';

/** RFC 8414 §3: where OAuth 2 clients find the authorization server's metadata. */
export const OAUTH_METADATA_PATH = '/.well-known/oauth-authorization-server';
/** OpenID Connect Discovery 1.0 §4: where OpenID relying parties look for the same facts. */
export const DISCOVERY_PATH = '/.well-known/openid-configuration';

/** The client authentication methods the token and introspection endpoints accept for an API key (RFC 6749 §2.3.1). */
export const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post'];

const metadataSchema = z
  .object({
    issuer: z.string(),
    jwks_uri: z.string(),
    token_endpoint: z.string(),
    revocation_endpoint: z.string(),
    introspection_endpoint: z.string(),
    userinfo_endpoint: z.string(),
    grant_types_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    introspection_endpoint_auth_methods_supported: z.array(z.string()),
    subject_types_supported: z.array(z.string()),
  })
  .meta({ id: 'AuthorizationServerMetadata' });

/**
 * The platform's metadata: only what works today. Both well-known documents serve it alike.
 *
 * What is left out, and why: there is no authorization endpoint yet (no grant here uses one),
 * so no `authorization_endpoint`, no `response_types_supported` and no
 * `code_challenge_methods_supported`; RFC 8414 §2 requires `authorization_endpoint` only when a
 * grant uses it, and erratum 7793 reads `response_types_supported` the same way, since §3.2 says a
 * member with zero elements MUST be omitted and this server has no response type to name. There
 * is no ID token, so no `id_token_signing_alg_values_supported`; no client authenticates with a
 * signed JWT, so no `token_endpoint_auth_signing_alg_values_supported`; tokens carry roles, not
 * scopes, so no `scopes_supported` (zero elements). OpenID Connect Discovery §3 makes
 * `response_types_supported`, `authorization_endpoint` and the ID token algorithms REQUIRED of an
 * OpenID Provider; this server is not one yet, and any value would promise a flow that answers
 * an error. The document at the OpenID path is served anyway because relying parties (openid-client
 * among them) look there first, and everything it says is true. `subject_types_supported` is true
 * as it stands (`sub` is the identity id, the same for every client).
 */
export function authorizationServerMetadata(issuer: string) {
  const endpoint = (path: string) => new URL(path, issuer).toString();
  return {
    issuer,
    jwks_uri: endpoint(JWKS_PATH),
    token_endpoint: endpoint(TOKEN_PATH),
    revocation_endpoint: endpoint(REVOKE_PATH),
    introspection_endpoint: endpoint(INTROSPECT_PATH),
    userinfo_endpoint: endpoint(USERINFO_PATH),
    grant_types_supported: [...GRANT_TYPES],
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    // Revocation needs no client: a token is its own proof (RFC 7009 §2.1 allows public clients).
    revocation_endpoint_auth_methods_supported: ['none'],
    // An admin's bearer token is accepted too; RFC 8414 has no method name for it.
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    subject_types_supported: ['public'],
  };
}

/** How long clients and HTTP caches may keep the metadata: it changes only with a release. */
const METADATA_MAX_AGE_SECONDS = 3600;

export async function discoveryRoutes(app: App, options: { issuer: string }): Promise<void> {
  const metadata = authorizationServerMetadata(options.issuer);
  const documents = [
    [OAUTH_METADATA_PATH, 'getAuthorizationServerMetadata', 'Authorization server metadata (RFC 8414)'],
    [DISCOVERY_PATH, 'getOpenIdConfiguration', 'Authorization server metadata at the OpenID Connect discovery path'],
  ] as const;
  for (const [path, operationId, summary] of documents) {
    app.get(
      path,
      {
        config: { auth: 'public' },
        schema: {
          tags: ['SSO'],
          operationId,
          summary,
          description: `Only what works today: ${SIGNING_ALGORITHM} access tokens from the token endpoint; no authorization endpoint and no ID token yet.`,
          response: { 200: metadataSchema },
        },
      },
      async (_request, reply) => {
        reply.header('cache-control', `public, max-age=${METADATA_MAX_AGE_SECONDS}`);
        return metadata;
      },
    );
  }
}
