import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@app/platform';
import { buildApp } from './app.js';

export { buildApp } from './app.js';
export { DOMAINS, post, product } from './domains/index.js';

/** The crud service: generic domains over its own schema, migrated on start. */
export const crudService: ServiceDefinition = {
  name: 'crud',
  migrations: fileURLToPath(new URL('../prisma/migrations', import.meta.url)),
  build: buildApp,
};
