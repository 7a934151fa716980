/**
 * `node dist/rotate-keys.js` (npm run rotate-keys): adds a new signing key now, e.g. after a
 * suspected key leak or from a CronJob. The new key signs after SSO_KEY_ACTIVATION_DELAY_SECONDS;
 * the old one stays published until its tokens expire. Safe beside running replicas.
 */
import { closeDependencies, createLogger, loadConfigOrExit, migrate, openDependencies } from '@app/platform';
import { configuredKeyService } from './keys/configured.js';
import { SSO_MIGRATIONS } from './index.js';

const config = loadConfigOrExit();
const logger = createLogger(config);
const deps = await openDependencies(config, logger, { name: 'sso-rotate-keys' });
try {
  await migrate(deps.database, { schema: 'sso', directory: SSO_MIGRATIONS, logger });
  const keys = configuredKeyService(config, deps.database, logger);
  await keys.ensureKey();
  const { kid, activatesAt } = await keys.rotate();
  logger.info({ kid, activatesAt: activatesAt.toISOString() }, 'new signing key added');
} catch (error) {
  logger.fatal({ err: error }, 'key rotation failed');
  process.exitCode = 1;
} finally {
  await closeDependencies(deps);
}
