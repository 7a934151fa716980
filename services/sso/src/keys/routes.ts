import { TOKEN_ISSUER } from '@app/contracts';
import { problemSchema, type App } from '@app/platform';
import { z } from 'zod';
import type { KeyService } from './service.js';

/** Where every verifier fetches the keys (the registry's TOKEN_ISSUER says so, for all of them). */
export const JWKS_PATH = TOKEN_ISSUER.jwksPath;
export const ROTATE_KEYS_PATH = '/api/v1/sso/keys/rotate';

/**
 * How long verifiers and HTTP caches may keep the JWKS. Short: a new key is published
 * SSO_KEY_ACTIVATION_DELAY_SECONDS before it signs, and verifiers also refetch on an unknown `kid`.
 */
export const JWKS_MAX_AGE_SECONDS = 300;

const jwkSchema = z
  .object({ kty: z.string(), crv: z.string(), x: z.string(), y: z.string(), kid: z.string(), alg: z.string(), use: z.string() })
  .meta({ id: 'PublicJwk', description: 'An ES256 public key; private members never appear' });

const jwksSchema = z.object({ keys: z.array(jwkSchema) }).meta({ id: 'Jwks' });

const rotatedSchema = z
  .object({
    kid: z.string().describe('The new key, published in the JWKS from now on'),
    activatesAt: z.string().describe('When the new key starts signing (ISO 8601); the previous one signs until then'),
  })
  .meta({ id: 'RotatedKey' });

export interface KeyRoutesOptions {
  keys: KeyService;
}

export async function keyRoutes(app: App, options: KeyRoutesOptions): Promise<void> {
  app.get(
    JWKS_PATH,
    {
      config: { auth: 'public' },
      schema: {
        tags: ['SSO'],
        operationId: 'getJwks',
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

  app.post(
    ROTATE_KEYS_PATH,
    {
      config: { auth: { roles: ['admin'] } },
      schema: {
        tags: ['SSO'],
        operationId: 'rotateSigningKey',
        summary: 'Rotate the signing key (admins)',
        description:
          'Adds a key that is published now and signs after SSO_KEY_ACTIVATION_DELAY_SECONDS, so every ' +
          'verifier knows it first; the current key keeps signing until then and stays published until ' +
          'every token it signed has expired. Tokens issued before keep working.',
        security: [{ bearerAuth: [] }],
        response: { 201: rotatedSchema, 401: problemSchema, 403: problemSchema },
      },
    },
    async (_request, reply) => {
      const { kid, activatesAt } = await options.keys.rotate();
      return reply.code(201).header('cache-control', 'no-store').send({ kid, activatesAt: activatesAt.toISOString() });
    },
  );
}
