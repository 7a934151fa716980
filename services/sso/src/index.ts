import { fileURLToPath } from 'node:url';
import type { Dependencies, ServiceDefinition } from '@app/platform';
import { buildApp, type SsoAppOptions } from './app.js';

export { buildApp, type SsoAppOptions } from './app.js';
export { JWKS_PATH, DISCOVERY_PATH, USERINFO_PATH, JWKS_MAX_AGE_SECONDS } from './keys/routes.js';
export { TOKEN_PATH, REVOKE_PATH } from './tokens/routes.js';
export { DEV_ADMIN_EMAIL } from './bootstrap/admin.js';

/** sso's Prisma Migrate folder (one level above src/ and dist/ alike). */
export const SSO_MIGRATIONS = fileURLToPath(new URL('../prisma/migrations', import.meta.url));

/** The sso service, with options (tests pass `announce` to read a generated admin password). */
export function createSsoService(options: SsoAppOptions = {}): ServiceDefinition {
  return { name: 'sso', migrations: SSO_MIGRATIONS, build: (deps: Dependencies) => buildApp(deps, options) };
}

export const ssoService: ServiceDefinition = createSsoService();
