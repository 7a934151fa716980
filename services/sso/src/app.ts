import {
  createApp,
  createPrismaClient,
  createTokenVerifier,
  databaseCheck,
  healthRoutes,
  RELEASE_VERSION,
  tokenVerifierOptions,
  type App,
  type Dependencies,
} from '@app/platform';
import { startAdminBootstrap, DEV_ADMIN_EMAIL } from './bootstrap/admin.js';
import { subscribeToCredentialEvents } from './events/credential-events.js';
import { PrismaClient } from './generated/prisma/client.js';
import { keyRoutes } from './keys/routes.js';
import { configuredKeyService } from './keys/configured.js';
import type { KeyService } from './keys/service.js';
import { parseTrustedProxies } from './tokens/client-address.js';
import { createRefreshTokenRepository } from './tokens/repository.js';
import { tokenRoutes } from './tokens/routes.js';
import { createTokenService, type TokenService } from './tokens/service.js';
import { createSystemTokens, createTokenSigner } from './tokens/signer.js';
import { createLoginThrottle } from './tokens/throttle.js';
import { createUpstreamClient } from './upstream/internal-client.js';
import { userinfoRoutes } from './userinfo/routes.js';

export interface SsoAppOptions {
  /** Where a generated development admin password is shown (default: the console, once). */
  announce?: (message: string) => void;
}

/** How long sso waits for identity or credentials during a token request. */
const UPSTREAM_TIMEOUT_MS = 5_000;
/** Longest pause between two checks whether the signing key is due for rotation. */
const ROTATION_CHECK_MAX_MS = 3_600_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** sso's key set and grants, for the rotation command and tests. */
    sso: { keys: KeyService; tokens: TokenService };
  }
}

export async function buildApp(deps: Dependencies, options: SsoAppOptions = {}): Promise<App> {
  const { config, logger } = deps;
  const trustedProxies = parseTrustedProxies(config.TRUST_PROXY);
  const prisma = createPrismaClient(PrismaClient, deps.database);
  const keys = configuredKeyService(config, deps.database, logger, prisma);
  await keys.ensureKey();

  const signer = createTokenSigner({
    keys,
    issuer: config.JWT_ISSUER,
    audience: config.JWT_AUDIENCE,
    accessTokenTtlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
  });
  const upstream = createUpstreamClient({
    identityUrl: config.IDENTITY_URL,
    credentialsUrl: config.CREDENTIALS_URL,
    systemToken: createSystemTokens(signer),
    timeoutMs: UPSTREAM_TIMEOUT_MS,
  });
  const tokens = createTokenService({
    repository: createRefreshTokenRepository(prisma),
    signer,
    upstream,
    throttle: createLoginThrottle(deps.cache, logger),
    logger,
    refreshTokenTtlSeconds: config.REFRESH_TOKEN_TTL_SECONDS,
  });
  // sso checks its own tokens against its own key table: no HTTP round trip to itself.
  const verifier = createTokenVerifier(tokenVerifierOptions(config), keys.verificationKeys);

  const app = await createApp({
    name: 'sso',
    version: RELEASE_VERSION,
    logger,
    bodyLimit: config.BODY_LIMIT,
    description: 'Signing keys, JWKS and the OAuth 2 token endpoint',
  });
  app.decorate('sso', { keys, tokens });
  await healthRoutes(app, { service: 'sso', version: RELEASE_VERSION, checks: { database: databaseCheck(deps.database) } });
  await keyRoutes(app, { keys, publicUrl: config.JWT_ISSUER, issuer: config.JWT_ISSUER });
  await app.register(tokenRoutes, { tokens, trustedProxies });
  await userinfoRoutes(app, { verifier });

  const subscription = await subscribeToCredentialEvents({ bus: deps.bus, logger, revokeIdentity: tokens.revokeIdentity });

  // Every replica checks; the key lock and the newest key's age make only one of them rotate.
  const rotationCheckMs = Math.min((config.SSO_KEY_ROTATION_INTERVAL_SECONDS * 1000) / 4, ROTATION_CHECK_MAX_MS);
  const rotation = setInterval(() => {
    keys.rotateIfDue().catch((error: unknown) => logger.error({ err: error }, 'scheduled key rotation failed'));
  }, rotationCheckMs);
  rotation.unref();

  const adminEmail = config.BOOTSTRAP_ADMIN_EMAIL ?? (config.ALL_IN_ONE ? DEV_ADMIN_EMAIL : undefined);
  let bootstrap: ReturnType<typeof startAdminBootstrap> | undefined;
  if (adminEmail) {
    // After listening: identity and credentials verify sso's system token against sso's JWKS.
    app.addHook('onListen', async () => {
      bootstrap ??= startAdminBootstrap({
        upstream,
        logger,
        email: adminEmail,
        password: config.BOOTSTRAP_ADMIN_PASSWORD,
        announce: options.announce ?? ((message) => console.log(message)),
      });
    });
  }

  app.addHook('onClose', async () => {
    clearInterval(rotation);
    bootstrap?.stop();
    await subscription.unsubscribe();
  });
  return app;
}
