import type { App } from '@app/platform';
import { z } from 'zod';
import { GRANT_TYPES } from '../tokens/service.js';
import { REVOKE_PATH, TOKEN_PATH } from '../tokens/routes.js';
import { SIGNING_ALGORITHM, type KeyService } from './service.js';

export const JWKS_PATH = '/api/v1/sso/jwks';
export const DISCOVERY_PATH = '/.well-known/openid-configuration';
export const USERINFO_PATH = '/api/v1/sso/userinfo';

/**
 * How long verifiers and HTTP caches may keep the JWKS. Short: a new key is published
 * SSO_KEY_ACTIVATION_DELAY_SECONDS before it signs, and verifiers also refetch on an unknown `kid`.
 */
export const JWKS_MAX_AGE_SECONDS = 300;

const jwkSchema = z
  .object({ kty: z.string(), crv: z.string(), x: z.string(), y: z.string(), kid: z.string(), alg: z.string(), use: z.string() })
  .meta({ id: 'PublicJwk', description: 'An ES256 public key; private members never appear' });

const jwksSchema = z.object({ keys: z.array(jwkSchema) }).meta({ id: 'Jwks' });

const discoverySchema = z
  .object({
    issuer: z.string(),
    jwks_uri: z.string(),
    token_endpoint: z.string(),
    revocation_endpoint: z.string(),
    userinfo_endpoint: z.string(),
    grant_types_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    id_token_signing_alg_values_supported: z.array(z.string()),
    token_endpoint_auth_signing_alg_values_supported: z.array(z.string()),
    response_types_supported: z.array(z.string()),
    subject_types_supported: z.array(z.string()),
    scopes_supported: z.array(z.string()),
    claims_supported: z.array(z.string()),
  })
  .meta({ id: 'OpenIdConfiguration' });

export interface KeyRoutesOptions {
  keys: KeyService;
  /** The public base URL clients reach the platform at (the gateway). */
  publicUrl: string;
  issuer: string;
}

export async function keyRoutes(app: App, options: KeyRoutesOptions): Promise<void> {
  app.get(
    JWKS_PATH,
    {
      config: { auth: 'public' },
      schema: {
        tags: ['SSO'],
        summary: 'Public signing keys (JWKS)',
        description: 'The current signing key, a key about to sign, and retired keys whose tokens may still be valid.',
        response: { 200: jwksSchema },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`);
      return { keys: await options.keys.publicKeys() };
    },
  );

  const endpoint = (path: string) => new URL(path, options.publicUrl).toString();
  app.get(
    DISCOVERY_PATH,
    {
      config: { auth: 'public' },
      schema: {
        tags: ['SSO'],
        summary: 'Authorization server metadata (OpenID Connect discovery)',
        response: { 200: discoverySchema },
      },
    },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=3600');
      return {
        issuer: options.issuer,
        jwks_uri: endpoint(JWKS_PATH),
        token_endpoint: endpoint(TOKEN_PATH),
        revocation_endpoint: endpoint(REVOKE_PATH),
        userinfo_endpoint: endpoint(USERINFO_PATH),
        grant_types_supported: [...GRANT_TYPES],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        revocation_endpoint_auth_methods_supported: ['none'],
        id_token_signing_alg_values_supported: [SIGNING_ALGORITHM],
        token_endpoint_auth_signing_alg_values_supported: [SIGNING_ALGORITHM],
        response_types_supported: ['token'],
        subject_types_supported: ['public'],
        scopes_supported: [],
        claims_supported: ['iss', 'aud', 'sub', 'iat', 'exp', 'jti', 'roles'],
      };
    },
  );
}
