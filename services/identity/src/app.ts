import {
  cacheCheck,
  createApp,
  accessTokenVerifier,
  databaseCheck,
  healthRoutes,
  RELEASE_VERSION,
  startOutboxRelay,
  type App,
  type Dependencies,
  type TokenVerifier,
} from '@app/platform';
import { createIdentityRepository, IDENTITY_SCHEMA } from './identity/repository.js';
import { IDENTITY_PREFIX, identityInternalRoutes, identityRoutes } from './identity/routes.js';
import { createIdentityService } from './identity/service.js';

export interface IdentityAppOptions {
  /** Verifies access tokens; defaults to one on the configured JWKS. */
  verifier?: TokenVerifier;
}

/** The identity service: who someone is (name, email, avatar, roles), never how they sign in. */
export async function buildApp(deps: Dependencies, options: IdentityAppOptions = {}): Promise<App> {
  const app = await createApp({
    name: 'identity',
    version: RELEASE_VERSION,
    logger: deps.logger,
    bodyLimit: deps.config.BODY_LIMIT,
    description: 'Identities: name, email, avatar and roles (never passwords)',
  });
  const verifier = options.verifier ?? accessTokenVerifier(deps.config);
  const repository = createIdentityRepository(deps.database);
  const relay = startOutboxRelay({ database: deps.database, bus: deps.bus, schema: IDENTITY_SCHEMA, logger: deps.logger });
  const service = createIdentityService({ repository, cache: deps.cache, logger: deps.logger, eventsCommitted: relay.wake });
  app.addHook('onClose', async () => {
    await relay.stop();
    await repository.close();
  });

  await healthRoutes(app, {
    service: 'identity',
    version: RELEASE_VERSION,
    checks: { database: databaseCheck(deps.database), cache: cacheCheck(deps.cache) },
  });
  await app.register(identityRoutes, { prefix: IDENTITY_PREFIX, service, verifier });
  await app.register(identityInternalRoutes, { service, verifier });
  return app;
}
