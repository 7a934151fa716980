import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@app/platform';
import { buildApp } from './app.js';

export { buildApp, type CredentialsAppOptions } from './app.js';
export { CREDENTIALS_PREFIX } from './credentials/routes.js';

/** The credentials service, as the all-in-one launcher and its standalone entry run it. */
export const credentialsService: ServiceDefinition = {
  name: 'credentials',
  migrations: fileURLToPath(new URL('../prisma/migrations', import.meta.url)),
  build: (deps) => buildApp(deps),
};
