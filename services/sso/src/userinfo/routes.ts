import type { IdentityClient } from '@app/contracts';
import { principalOf, problemSchema, type App } from '@app/platform';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

export const USERINFO_PATH = '/api/v1/sso/userinfo';

/** A userinfo POST carries no parameter we read: a form of a few fields at most. */
const USERINFO_BODY_LIMIT = 4 * 1024;

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
  // OpenID Connect Core §5.3.1: a client may POST; the token still comes in the Authorization
  // header, and whatever form it posts is read for nothing (RFC 6750 §2.2's form token is not
  // accepted: a token in a body ends up in logs).
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: USERINFO_BODY_LIMIT }, (_request, _body, done) => done(null, {}));
  const schema = (method: 'GET' | 'POST') => ({
    tags: ['SSO'],
    operationId: method === 'GET' ? 'getUserInfo' : 'postUserInfo',
    summary: "The bearer token's subject, roles and, by scope, email, name and picture",
    ...(method === 'POST' && { description: 'The same as GET (OpenID Connect Core §5.3.1); a form body, if any, is ignored.' }),
    security: [{ bearerAuth: [] }],
    response: { 200: userinfoSchema, 401: problemSchema, ...(method === 'POST' && { 413: problemSchema }) },
  });
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
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
  };
  app.get(USERINFO_PATH, { config: { auth: 'authenticated' }, schema: schema('GET') }, handler);
  app.post(USERINFO_PATH, { config: { auth: 'authenticated' }, bodyLimit: USERINFO_BODY_LIMIT, schema: schema('POST') }, handler);
}
