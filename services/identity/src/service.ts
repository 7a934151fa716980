import { fileURLToPath } from 'node:url';
import { AppError, defineService, parseTrustedProxies, type App } from '@app/platform';
import { identityConfig } from './config.js';
import { createIdentityRepository } from './identity/repository.js';
import { IDENTITY_PREFIX, identityInternalRoutes, identityRoutes } from './identity/routes.js';
import { createIdentityService } from './identity/service.js';
import { registerSignupLimit } from './identity/signup-limit.js';

/** The identity service: who someone is (name, email, avatar, roles), never how they sign in. */
export const identityService = defineService({
  name: 'identity',
  description: 'Identities: name, email, avatar and roles (never passwords)',
  tags: [{ name: 'Identity', description: 'Who someone is: name, email, avatar, roles and activation; sign-up is open' }],
  migrations: fileURLToPath(new URL('../prisma/migrations', import.meta.url)),
  outbox: true,
  config: identityConfig,
  checks: ['database', 'cache'],
  routes: async (app, { mode, config, database, cache, logger, eventsCommitted, provide }) => {
    const repository = createIdentityRepository(database);
    app.addHook('onClose', () => repository.close());
    const service = createIdentityService({ repository, cache, logger, eventsCommitted });
    provide({
      identity: {
        lookup: async (query) => (await service.lookup(query)) ?? undefined,
        create: async (input) => {
          try {
            const record = await service.createWithRoles(input);
            return { id: record.id, name: record.name, email: record.email, roles: record.roles, activated: record.activated };
          } catch (error) {
            if (error instanceof AppError && error.statusCode === 422) return undefined;
            throw error;
          }
        },
      },
    });
    // Its own scope: the rate-limit plugin decorates where it is registered, and the all-in-one
    // holds every service in one instance.
    await app.register(async (instance) => {
      const scope = instance as App;
      const signupRateLimit = await registerSignupLimit(scope, {
        ...config.SIGNUP_RATE_LIMIT,
        trustProxy: config.TRUST_PROXY,
        cache,
        logger,
      });
      await scope.register(identityRoutes, { prefix: IDENTITY_PREFIX, service, signupRateLimit, trustedProxies: parseTrustedProxies(config.TRUST_PROXY) });
    });
    // Peers in this process call it in-process; only a standalone service serves other processes.
    if (mode === 'standalone') await app.register(identityInternalRoutes, { service });
  },
});
