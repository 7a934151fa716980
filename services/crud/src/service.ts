import { fileURLToPath } from 'node:url';
import { createDomainPlugin, domainTag } from '@app/crud';
import { defineService } from '@app/platform';
import { crudConfig } from './config.js';
import { DOMAINS } from './domains/index.js';
import { createCrudPrisma, CRUD_SCHEMA } from './repository.js';

/** The crud service: every generic domain in DOMAINS, each under its own prefix. */
export const crudService = defineService({
  name: 'crud',
  description: 'Generic CRUD domains: product and post',
  tags: DOMAINS.map(domainTag),
  config: crudConfig,
  migrations: fileURLToPath(new URL('../prisma/migrations', import.meta.url)),
  outbox: true,
  checks: ['database', 'cache'],
  routes: async (app, { config, database, cache, logger, eventsCommitted }) => {
    const prisma = createCrudPrisma(database);
    app.addHook('onClose', () => prisma.$disconnect());
    for (const domain of DOMAINS) {
      await app.register(createDomainPlugin(domain), {
        prisma,
        schema: CRUD_SCHEMA,
        cache,
        cacheTtlSeconds: config.CACHE_TTL_SECONDS,
        logger,
        onCommitted: eventsCommitted,
      });
    }
  },
});
