import { createPrismaClient, type Database, type Logger } from '@app/platform';
import type { SsoConfig } from '../config.js';
import { PrismaClient } from '../generated/prisma/client.js';
import { createKeyEncryption } from './key-encryption.js';
import { createKeyRepository } from './repository.js';
import { createKeyService, type KeyService } from './service.js';

/** The key service as a deployment configures it; the app and the rotate command share it. */
export function configuredKeyService(
  config: SsoConfig,
  database: Database,
  logger: Logger,
  prisma = createPrismaClient(PrismaClient, database),
): KeyService {
  return createKeyService({
    repository: createKeyRepository(prisma),
    database,
    encryption: createKeyEncryption(config.SSO_KEY_ENCRYPTION_SECRET),
    logger,
    accessTokenTtlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
    clockToleranceSeconds: config.JWT_CLOCK_TOLERANCE_SECONDS,
    activationDelaySeconds: config.SSO_KEY_ACTIVATION_DELAY_SECONDS,
    rotationIntervalSeconds: config.SSO_KEY_ROTATION_INTERVAL_SECONDS,
  });
}
