import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { credentialsApi } from '@app/contracts';
import { bumpSignInGeneration, defineService, recordLocation } from '@app/platform';
import { credentialsConfig } from './config.js';
import { createCredentialRepository } from './credentials/repository.js';
import { federatedSubjectNotFound, subjectTaken } from './credentials/errors.js';
import { credentialRoutes, CREDENTIALS_PREFIX } from './credentials/routes.js';
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
  idempotency: true,
  checks: ['database', 'cache'],
  routes: async (app, { config, database, cache, logger, clients, eventsCommitted, serve }) => {
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
    await serve(credentialsApi, {
      verifyPassword: (request, call) => service.verifyPassword(request, call.authority),
      verifyApiKey: ({ apiKey }, call) => service.verifyApiKey(apiKey, call.authority),
      createLocalPassword: async ({ identityId, password }, call) => {
        const { record, etag } = await service.create({ identity_id: identityId, provider: 'LOCAL', secret: password }, call, { platform: true });
        call.header('etag', etag);
        call.header('location', recordLocation(CREDENTIALS_PREFIX, record.id));
        return [record];
      },
      findFederated: async (request) => {
        const found = await service.findFederated(request);
        if (!found) throw federatedSubjectNotFound();
        return found;
      },
      createFederated: async (request, call) => {
        const created = await service.createFederated(request, call);
        if (!created) throw subjectTaken(request.provider);
        return created;
      },
    });
    await app.register(credentialRoutes, { prefix: CREDENTIALS_PREFIX, service });
  },
});
