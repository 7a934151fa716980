import { fileURLToPath } from 'node:url';
import { identityApi } from '@app/contracts';
import { defineService, parseTrustedProxies, recordLocation, type App } from '@app/platform';
import { identityConfig } from './config.js';
import { createIdentityRepository } from './identity/repository.js';
import { identityEmailNotFound, identityNotFound } from './identity/errors.js';
import { IDENTITY_PREFIX, identityRoutes } from './identity/routes.js';
import { createIdentityService } from './identity/service.js';
import { registerSignupLimit } from './identity/signup-limit.js';

/** The identity service: who someone is (name, email, avatar, roles), never how they sign in. */
export const identityService = defineService({
  name: 'identity',
  description: 'Identities: name, email, avatar and roles (never passwords)',
  tags: [{ name: 'Identity', description: 'Who someone is: name, email, avatar, roles and activation; sign-up is open' }],
  migrations: fileURLToPath(new URL('../prisma/migrations', import.meta.url)),
  outbox: true,
  idempotency: true,
  config: identityConfig,
  checks: ['database', 'cache'],
  routes: async (app, { config, database, cache, logger, eventsCommitted, serve }) => {
    const repository = createIdentityRepository(database);
    app.addHook('onClose', () => repository.close());
    const service = createIdentityService({ repository, cache, logger, eventsCommitted });
    await serve(identityApi, {
      lookup: async (query) => {
        const identity = await service.lookup(query);
        if (!identity) throw 'email' in query ? identityEmailNotFound() : identityNotFound(query.id);
        return identity;
      },
      create: async (input, call) => {
        const { id, name, email, roles, activated } = await service.createWithRoles(input);
        call.header('location', recordLocation(IDENTITY_PREFIX, id));
        return { id, name, email, roles, activated };
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
  },
});
