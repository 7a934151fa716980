import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { AppError, bumpSignInGeneration, defineService, systemPrincipal } from '@app/platform';
import { credentialsConfig } from './config.js';
import { createCredentialRepository } from './credentials/repository.js';
import { credentialInternalRoutes, credentialRoutes, CREDENTIALS_PREFIX } from './credentials/routes.js';
import { API_KEY_HASH_KEY_BYTES, createApiKeyHasher, createPasswordHasher, decodeApiKeyHashKey } from './credentials/secrets.js';
import { createCredentialService } from './credentials/service.js';

/** The row of credentials' `server_key` table holding the API key hash key when none is configured. */
const API_KEY_HASH_KEY_NAME = 'api-key-hmac';

/** The credentials service: how identities sign in (passwords, federated accounts, API keys). */
export const credentialsService = defineService({
  name: 'credentials',
  description: 'Credentials per identity: LOCAL passwords (argon2id), GOOGLE/GITHUB subjects, API keys',
  tags: [{ name: 'Credentials', description: 'How an identity signs in: passwords, federated subjects and API keys; secrets are never returned' }],
  config: credentialsConfig,
  migrations: fileURLToPath(new URL('../prisma/migrations', import.meta.url)),
  outbox: true,
  checks: ['database', 'cache'],
  routes: async (app, { mode, config, database, cache, logger, clients, eventsCommitted, provide }) => {
    const repository = createCredentialRepository(database);
    app.addHook('onClose', () => repository.close());
    // The configured key, or (development, the embedded default) one generated once and kept
    // in this service's database, so every replica and restart finds the same keys.
    const apiKeyHashKey =
      decodeApiKeyHashKey(config.API_KEY_HASH_KEY) ?? (await repository.serverKey(API_KEY_HASH_KEY_NAME, () => randomBytes(API_KEY_HASH_KEY_BYTES)));
    const service = createCredentialService({
      repository,
      hasher: createPasswordHasher({
        memoryCost: config.ARGON2_MEMORY_KIB,
        timeCost: config.ARGON2_TIME_COST,
        parallelism: config.ARGON2_PARALLELISM,
        concurrency: config.ARGON2_CONCURRENCY,
      }),
      apiKeys: createApiKeyHasher(apiKeyHashKey),
      identities: clients.identity,
      eventsCommitted,
      signInChanged: () => bumpSignInGeneration(cache, logger),
    });
    const inProcess = { principal: systemPrincipal('credentials'), authority: {} };
    provide({
      credentials: {
        verifyPassword: (request) => service.verifyPassword(request, inProcess.authority),
        verifyApiKey: (apiKey) => service.verifyApiKey(apiKey, inProcess.authority),
        createLocalPassword: async (identityId, password) => {
          try {
            await service.create({ identity_id: identityId, provider: 'LOCAL', secret: password }, inProcess, { platform: true });
            return true;
          } catch (error) {
            if (error instanceof AppError && error.statusCode === 422) return false;
            throw error;
          }
        },
        findFederated: (request) => service.findFederated(request),
        createFederated: (request) => service.createFederated(request, inProcess),
      },
    });
    await app.register(credentialRoutes, { prefix: CREDENTIALS_PREFIX, service });
    // Peers in this process call it in-process; only a standalone service serves other processes.
    if (mode === 'standalone') await app.register(credentialInternalRoutes, { service });
  },
});
