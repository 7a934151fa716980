import type { Dependencies, ServiceDefinition } from '@app/platform';
import { buildApp } from './app.js';

export { buildApp } from './app.js';
export { HEALTH_PREFIX } from './health/routes.js';

/** The health service, reporting on the services the configuration lists. */
export const healthService: ServiceDefinition = {
  name: 'health',
  build: (deps: Dependencies) => {
    const urls: Record<string, string> = {
      identity: deps.config.IDENTITY_URL,
      credentials: deps.config.CREDENTIALS_URL,
      sso: deps.config.SSO_URL,
      crud: deps.config.CRUD_URL,
    };
    // Health reports on the domain services; itself and the gateway are not in its map.
    const services = Object.fromEntries(
      deps.config.PLATFORM_SERVICES.filter((name) => name in urls).map((name) => [name, urls[name]!]),
    );
    return buildApp(deps, { services });
  },
};
