import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@app/platform';
import { buildApp } from './app.js';

export { buildApp, type IdentityAppOptions } from './app.js';
export { IDENTITY_PREFIX } from './identity/routes.js';

/** The identity service, as the all-in-one launcher and its standalone entry run it. */
export const identityService: ServiceDefinition = {
  name: 'identity',
  migrations: fileURLToPath(new URL('../prisma/migrations', import.meta.url)),
  build: (deps) => buildApp(deps),
};
