import { fileURLToPath } from 'node:url';
import { checkDomainTables, createDomainPlugin, domainTag, loadDomains } from '@app/crud';
import { defineService } from '@app/platform';
import { crudConfig } from './config.js';
import { createCrudPrisma, CRUD_SCHEMA } from './repository.js';

/** Every domain the crud service serves: one file each in domains/, where adding a file adds a domain. */
export const DOMAINS = await loadDomains(fileURLToPath(new URL('./domains/', import.meta.url)));

/** "a, b and c": the domains' names, as the service's description lists them. */
const names = DOMAINS.map((domain) => domain.name).join(', ').replace(/, ([^,]*)$/, ' and $1');

/** The crud service: every generic domain in DOMAINS, each under its own prefix. */
export const crudService = defineService({
  name: 'crud',
  description: `Generic CRUD domains: ${names}`,
  tags: DOMAINS.map(domainTag),
  config: crudConfig,
  migrations: fileURLToPath(new URL('../prisma/migrations', import.meta.url)),
  outbox: true,
  idempotency: true,
  // The tables come from the migrations; each must still hold what its domain declares.
  checkSchema: (session, schema) => checkDomainTables(session, schema, DOMAINS),
  checks: ['database', 'cache'],
  routes: async (app, { config, database, cache, logger, eventsCommitted }) => {
    const prisma = createCrudPrisma(database);
    app.addHook('onClose', () => prisma.$disconnect());
    for (const domain of DOMAINS) {
      await app.register(createDomainPlugin(domain), {
        prisma,
        database,
        schema: CRUD_SCHEMA,
        cache,
        cacheTtlSeconds: config.CACHE_TTL_SECONDS,
        logger,
        onCommitted: eventsCommitted,
      });
    }
  },
});
