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
} from '@app/platform';
import { DOMAINS } from './domains/index.js';
import { createCrudPrisma, CRUD_SCHEMA } from './repository.js';

/** The crud service: every generic domain in DOMAINS, each under its own prefix. */
export async function buildApp(deps: Dependencies): Promise<App> {
  const app = await createApp({
    name: 'crud',
    version: RELEASE_VERSION,
    logger: deps.logger,
    bodyLimit: deps.config.BODY_LIMIT,
    description: 'Generic CRUD domains: product and post',
  });
  const prisma = createCrudPrisma(deps.database);
  const relay = startOutboxRelay({ database: deps.database, bus: deps.bus, schema: CRUD_SCHEMA, logger: deps.logger });
  app.addHook('onClose', async () => {
    await relay.stop();
    await prisma.$disconnect();
  });
  const verifier = accessTokenVerifier(deps.config);

  await healthRoutes(app, {
    service: 'crud',
    version: RELEASE_VERSION,
    checks: { database: databaseCheck(deps.database), cache: cacheCheck(deps.cache) },
  });
  for (const domain of DOMAINS) {
    await app.register(domain.plugin, {
      prisma,
      schema: CRUD_SCHEMA,
      cache: deps.cache,
      cacheTtlSeconds: deps.config.CACHE_TTL_SECONDS,
      verifier,
      logger: deps.logger,
      onCommitted: relay.wake,
    });
  }
  return app;
}
