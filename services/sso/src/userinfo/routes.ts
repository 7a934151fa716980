import { principalOf, problemSchema, type App } from '@app/platform';
import { z } from 'zod';

export const USERINFO_PATH = '/api/v1/sso/userinfo';

const userinfoSchema = z
  .object({ sub: z.string(), roles: z.array(z.string()), exp: z.number().int() })
  .meta({ id: 'UserInfo' });

/** Who the bearer token says its holder is: lets a client check a token without parsing it. */
export async function userinfoRoutes(app: App): Promise<void> {
  app.get(
    USERINFO_PATH,
    {
      config: { auth: 'authenticated' },
      schema: {
        tags: ['SSO'],
        operationId: 'getUserInfo',
        summary: "The bearer token's subject and roles",
        security: [{ bearerAuth: [] }],
        response: { 200: userinfoSchema, 401: problemSchema },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      reply.header('cache-control', 'no-store');
      return { sub: principal.id, roles: principal.roles, exp: principal.claims.exp };
    },
  );
}
