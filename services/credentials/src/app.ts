import {
  cacheCheck,
  createApp,
  accessTokenVerifier,
  databaseCheck,
  healthRoutes,
  RELEASE_VERSION,
  startOutboxRelay,
  type App,
  type Dependencies,
  type TokenVerifier,
} from '@app/platform';
import { createIdentityClient, type IdentityClient } from './credentials/identity-client.js';
import { createCredentialRepository, CREDENTIALS_SCHEMA } from './credentials/repository.js';
import { credentialInternalRoutes, credentialRoutes, CREDENTIALS_PREFIX } from './credentials/routes.js';
import { createPasswordHasher } from './credentials/secrets.js';
import { createCredentialService } from './credentials/service.js';

export interface CredentialsAppOptions {
  /** Verifies access tokens; defaults to one on the configured JWKS. */
  verifier?: TokenVerifier;
  /** The identity service; defaults to HTTP calls to IDENTITY_URL. */
  identities?: IdentityClient;
}

/** The credentials service: how identities sign in (passwords, federated accounts, API keys). */
export async function buildApp(deps: Dependencies, options: CredentialsAppOptions = {}): Promise<App> {
  const app = await createApp({
    name: 'credentials',
    version: RELEASE_VERSION,
    logger: deps.logger,
    bodyLimit: deps.config.BODY_LIMIT,
    description: 'Credentials per identity: LOCAL passwords (argon2id), GOOGLE/GITHUB subjects, API keys',
  });
  const verifier = options.verifier ?? accessTokenVerifier(deps.config);
  const repository = createCredentialRepository(deps.database);
  const relay = startOutboxRelay({ database: deps.database, bus: deps.bus, schema: CREDENTIALS_SCHEMA, logger: deps.logger });
  const service = createCredentialService({
    repository,
    hasher: createPasswordHasher({
      memoryCost: deps.config.ARGON2_MEMORY_KIB,
      timeCost: deps.config.ARGON2_TIME_COST,
      parallelism: deps.config.ARGON2_PARALLELISM,
      concurrency: deps.config.ARGON2_CONCURRENCY,
    }),
    identities: options.identities ?? createIdentityClient(deps.config.IDENTITY_URL),
    eventsCommitted: relay.wake,
  });
  app.addHook('onClose', async () => {
    await relay.stop();
    await repository.close();
  });

  await healthRoutes(app, {
    service: 'credentials',
    version: RELEASE_VERSION,
    checks: { database: databaseCheck(deps.database), cache: cacheCheck(deps.cache) },
  });
  await app.register(credentialRoutes, { prefix: CREDENTIALS_PREFIX, service, verifier });
  await app.register(credentialInternalRoutes, { service, verifier });
  return app;
}
