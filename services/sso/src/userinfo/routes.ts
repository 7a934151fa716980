import type { IdentityClient } from '@app/contracts';
import { principalOf, problemSchema, type App } from '@app/platform';
import { z } from 'zod';

export const USERINFO_PATH = '/api/v1/sso/userinfo';

/** The claims userinfo can return (OpenID Connect Core §5.1), for the discovery document. */
export const USERINFO_CLAIMS = ['sub', 'email', 'name', 'picture'];

const userinfoSchema = z
  .object({
    sub: z.string(),
    email: z.string().optional().describe('With the email scope'),
    name: z.string().optional().describe('With the profile scope'),
    picture: z.string().optional().describe('With the profile scope, when the identity has an avatar'),
    roles: z.array(z.string()),
    exp: z.number().int(),
  })
  .meta({ id: 'UserInfo' });

/**
 * Who the bearer token says its holder is (OpenID Connect Core §5.3): `sub`, and for a token
 * granted scopes by browser sign-in the claims they open (`email`; `name` and `picture` with
 * `profile`), read from identity now, not copied into the token. `roles` and `exp` let any
 * client check a token without parsing it.
 */
export async function userinfoRoutes(app: App, options: { identities: IdentityClient }): Promise<void> {
  app.get(
    USERINFO_PATH,
    {
      config: { auth: 'authenticated' },
      schema: {
        tags: ['SSO'],
        operationId: 'getUserInfo',
        summary: "The bearer token's subject, roles and, by scope, email, name and picture",
        security: [{ bearerAuth: [] }],
        response: { 200: userinfoSchema, 401: problemSchema },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      reply.header('cache-control', 'no-store');
      const base = { sub: principal.id, roles: principal.roles, exp: principal.claims.exp };
      const scopes = principal.claims.scope?.split(' ') ?? [];
      if (!scopes.includes('email') && !scopes.includes('profile')) return base;
      const identity = await options.identities.lookup({ id: principal.id });
      if (!identity) return base;
      return {
        ...base,
        ...(scopes.includes('email') && { email: identity.email }),
        ...(scopes.includes('profile') && { name: identity.name, ...(identity.avatar && { picture: identity.avatar }) }),
      };
    },
  );
}
