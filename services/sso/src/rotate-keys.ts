/**
 * `node dist/rotate-keys.js` (npm run rotate-keys): adds a new signing key now, e.g. after a
 * suspected key leak or from a CronJob. The new key signs after SSO_KEY_ACTIVATION_DELAY_SECONDS;
 * the old one stays published until its tokens expire. Safe beside running replicas.
 */
import { createLogger, loadConfigOrExit, migrate, openPGlite, openPostgres } from '@app/platform';
import { join } from 'node:path';
import { configuredKeyService } from './keys/configured.js';
import { ssoService, SSO_MIGRATIONS } from './service.js';

const config = loadConfigOrExit(ssoService.config ?? []);
const logger = createLogger(config);
// Only the database: the running platform reads the new key from the same table.
const database = config.DATABASE_URL
  ? openPostgres({ url: config.DATABASE_URL, poolMax: 1, logger })
  : await openPGlite({ dataDir: join(config.DATA_DIR, 'pglite'), logger });
try {
  await migrate(database, { schema: 'sso', directory: SSO_MIGRATIONS, logger });
  const keys = configuredKeyService(config, database, logger);
  await keys.ensureKey();
  const { kid, activatesAt } = await keys.rotate();
  logger.info({ kid, activatesAt: activatesAt.toISOString() }, 'new signing key added');
} catch (error) {
  logger.fatal({ err: error }, 'key rotation failed');
  process.exitCode = 1;
} finally {
  await database.close();
}
