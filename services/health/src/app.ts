import {
  cacheCheck,
  createApp,
  databaseCheck,
  healthRoutes,
  RELEASE_VERSION,
  type App,
  type Dependencies,
} from '@app/platform';
import { healthReportRoutes } from './health/routes.js';

export interface HealthAppOptions {
  /** Base URL of each service whose readiness the public report includes. */
  services: Record<string, string>;
}

export async function buildApp(deps: Dependencies, options: HealthAppOptions): Promise<App> {
  const app = await createApp({
    name: 'health',
    version: RELEASE_VERSION,
    logger: deps.logger,
    bodyLimit: deps.config.BODY_LIMIT,
    description: 'Liveness and aggregated readiness of the platform',
  });
  const database = databaseCheck(deps.database);
  const cache = cacheCheck(deps.cache);
  await healthRoutes(app, { service: 'health', version: RELEASE_VERSION, checks: { database, cache } });
  await healthReportRoutes(app, { database, cache, services: options.services, dataDir: deps.config.DATA_DIR });
  return app;
}
