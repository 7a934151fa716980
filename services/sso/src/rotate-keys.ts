/**
 * `node dist/rotate-keys.js` (npm run rotate-keys): adds a new signing key now, e.g. after a
 * suspected key leak or from a CronJob. The new key signs after SSO_KEY_ACTIVATION_DELAY_SECONDS;
 * the old one stays published until its tokens expire. Safe beside running replicas.
 */
import { closeDependencies, createLogger, loadConfigOrExit, migrate, openDependencies } from '@app/platform';
import { createKeyEncryption } from './keys/key-encryption.js';
import { createKeyRepository } from './keys/repository.js';
import { createKeyService } from './keys/service.js';
import { PrismaClient } from './generated/prisma/client.js';
import { createPrismaClient } from '@app/platform';
import { SSO_MIGRATIONS } from './index.js';

const config = loadConfigOrExit();
const logger = createLogger(config);
const deps = await openDependencies(config, logger, { name: 'sso-rotate-keys' });
try {
  await migrate(deps.database, { schema: 'sso', directory: SSO_MIGRATIONS, logger });
  const keys = createKeyService({
    repository: createKeyRepository(createPrismaClient(PrismaClient, deps.database)),
    database: deps.database,
    encryption: createKeyEncryption(config.SSO_KEY_ENCRYPTION_SECRET),
    logger,
    accessTokenTtlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
    clockToleranceSeconds: config.JWT_CLOCK_TOLERANCE_SECONDS,
    activationDelaySeconds: config.SSO_KEY_ACTIVATION_DELAY_SECONDS,
    rotationIntervalSeconds: config.SSO_KEY_ROTATION_INTERVAL_SECONDS,
  });
  await keys.ensureKey();
  const { kid, activatesAt } = await keys.rotate();
  logger.info({ kid, activatesAt: activatesAt.toISOString() }, 'new signing key added');
} catch (error) {
  logger.fatal({ err: error }, 'key rotation failed');
  process.exitCode = 1;
} finally {
  await closeDependencies(deps);
}
