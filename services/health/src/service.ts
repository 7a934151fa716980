import { DOMAIN_SERVICES } from '@app/contracts';
import { cacheCheck, databaseCheck, defineService } from '@app/platform';
import { healthReportRoutes } from './health/routes.js';

/** The health service: the public liveness and the platform's aggregated readiness. */
export const healthService = defineService({
  name: 'health',
  description: 'Liveness and aggregated readiness of the platform',
  tags: [{ name: 'Health', description: 'Liveness of the platform and readiness of its database, cache and services' }],
  checks: ['database', 'cache'],
  routes: async (app, { config, database, cache, clients }) => {
    // It reports on the domain services the deployment runs; not on itself or the gateway.
    const reported = config.PLATFORM_SERVICES.filter((name) => DOMAIN_SERVICES.includes(name));
    await healthReportRoutes(app, {
      database: databaseCheck(database),
      cache: cacheCheck(cache),
      services: Object.fromEntries(reported.map((name) => [name, () => clients.readiness(name)])),
      dataDir: config.DATA_DIR,
    });
  },
});
