import type { App } from '@app/platform';
import { z } from 'zod';
import { JWKS_PATH } from '../keys/routes.js';
import { SIGNING_ALGORITHM } from '../keys/service.js';
import { GRANT_TYPES } from '../tokens/service.js';
import { INTROSPECT_PATH, REVOKE_PATH, TOKEN_PATH } from '../tokens/routes.js';
import { USERINFO_CLAIMS, USERINFO_PATH } from '../userinfo/routes.js';
import { AUTHORIZE_PATH, END_SESSION_PATH } from '../browser/paths.js';
import { SCOPES } from '../clients/schemas.js';

/** RFC 8414 §3: where OAuth 2 clients find the authorization server's metadata. */
export const OAUTH_METADATA_PATH = '/.well-known/oauth-authorization-server';
/** OpenID Connect Discovery 1.0 §4: where OpenID relying parties look for the same facts. */
export const DISCOVERY_PATH = '/.well-known/openid-configuration';

/** The client authentication methods the token and introspection endpoints accept for an API key (RFC 6749 §2.3.1). */
export const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post'];

const metadataSchema = z
  .object({
    issuer: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    userinfo_endpoint: z.string(),
    end_session_endpoint: z.string(),
    jwks_uri: z.string(),
    revocation_endpoint: z.string(),
    introspection_endpoint: z.string(),
    response_types_supported: z.array(z.string()),
    response_modes_supported: z.array(z.string()),
    grant_types_supported: z.array(z.string()),
    code_challenge_methods_supported: z.array(z.string()),
    scopes_supported: z.array(z.string()),
    claims_supported: z.array(z.string()),
    id_token_signing_alg_values_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    introspection_endpoint_auth_methods_supported: z.array(z.string()),
    subject_types_supported: z.array(z.string()),
    authorization_response_iss_parameter_supported: z.boolean(),
    request_uri_parameter_supported: z.boolean(),
  })
  .meta({ id: 'AuthorizationServerMetadata' });

/**
 * The platform's metadata (RFC 8414, OpenID Connect Discovery 1.0 §3): only what works. Both
 * well-known documents serve it alike.
 *
 * The authorization endpoint answers `code` only, in the query (no implicit or hybrid flow,
 * no form_post), with PKCE S256 required. Registered clients authenticate with their secret
 * (HTTP Basic or the body) or, public ones, not at all (`none`); API keys use the same two
 * secret methods. No client authenticates with a signed JWT, so no
 * `token_endpoint_auth_signing_alg_values_supported`; ID tokens are signed, never encrypted.
 * `subject_types_supported` is `public`: `sub` is the identity id, the same for every client.
 */
export function authorizationServerMetadata(issuer: string) {
  const endpoint = (path: string) => new URL(path, issuer).toString();
  return {
    issuer,
    authorization_endpoint: endpoint(AUTHORIZE_PATH),
    token_endpoint: endpoint(TOKEN_PATH),
    userinfo_endpoint: endpoint(USERINFO_PATH),
    end_session_endpoint: endpoint(END_SESSION_PATH),
    jwks_uri: endpoint(JWKS_PATH),
    revocation_endpoint: endpoint(REVOKE_PATH),
    introspection_endpoint: endpoint(INTROSPECT_PATH),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [...GRANT_TYPES],
    code_challenge_methods_supported: ['S256'],
    scopes_supported: [...SCOPES],
    claims_supported: USERINFO_CLAIMS,
    id_token_signing_alg_values_supported: [SIGNING_ALGORITHM],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, 'none'],
    // RFC 7009 §2.1: a confidential client authenticates as at the token endpoint; a public one
    // (and the holder of a token issued to no client) sends none.
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, 'none'],
    // An admin's bearer token is accepted too; RFC 8414 has no method name for it.
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    subject_types_supported: ['public'],
    // RFC 9207: every authorization response names the issuer in `iss`.
    authorization_response_iss_parameter_supported: true,
    // OpenID Connect Discovery §3: absent means true; a request_uri is refused (never fetched).
    request_uri_parameter_supported: false,
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
          description: `Only what works: the authorization code flow with PKCE S256 from the hosted login page, ${SIGNING_ALGORITHM} access and ID tokens, userinfo and RP-initiated logout.`,
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
