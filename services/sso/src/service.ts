import { fileURLToPath } from 'node:url';
import { LIVE_REVOCATIONS_REQUEST, liveRevocationsRequestSchema } from '@app/contracts';
import { createPrismaClient, defineService, parseTrustedProxies, type Service } from '@app/platform';
import { registerAdminBootstrap } from './bootstrap/admin.js';
import { subscribeToCredentialEvents } from './events/credential-events.js';
import { subscribeToIdentityEvents } from './events/identity-events.js';
import { createAuthorizationCodeGrant } from './browser/code-grant.js';
import { createEndSession } from './browser/logout.js';
import { createBrowserSignInRepository } from './browser/repository.js';
import { browserRoutes } from './browser/routes.js';
import { createBrowserSignIn } from './browser/service.js';
import { clientAuthenticator } from './clients/authenticate.js';
import { createClientRepository } from './clients/repository.js';
import { clientRoutes } from './clients/routes.js';
import { createClientService } from './clients/service.js';
import { discoveryRoutes } from './discovery/routes.js';
import { createFederation } from './federation/federation.js';
import { federationRoutes } from './federation/routes.js';
import { PrismaClient } from './generated/prisma/client.js';
import { configuredKeyService } from './keys/configured.js';
import { ssoConfig, type SsoOwnConfig } from './config.js';
import { keyRoutes } from './keys/routes.js';
import { createGrantCache } from './tokens/grant-cache.js';
import { cacheLiveRefreshTokens } from './tokens/live-cache.js';
import { createRefreshTokenRepository } from './tokens/repository.js';
import { createRevoker, liveRevocationsOf } from './tokens/revocations.js';
import { tokenRoutes } from './tokens/routes.js';
import { createTokenService } from './tokens/service.js';
import { createSystemTokens, createTokenSigner } from './tokens/signer.js';
import { createLoginThrottle } from './tokens/throttle.js';
import { userinfoRoutes } from './userinfo/routes.js';

/** sso's Prisma Migrate folder (one level above src/ and dist/ alike). */
export const SSO_MIGRATIONS = fileURLToPath(new URL('../prisma/migrations', import.meta.url));

/** Longest pause between two checks whether the signing key is due for rotation. */
const ROTATION_CHECK_MAX_MS = 3_600_000;
/** How often finished authorization requests, browser sessions and expired revocations are swept out. */
const PURGE_INTERVAL_MS = 3_600_000;

export interface SsoOptions {
  /** Where a generated development admin password is shown (default: the console, once). */
  announce?: (message: string) => void;
}

/** sso: signing keys, JWKS, the OAuth 2 token endpoint and the first administrator. */
export function createSsoService(options: SsoOptions = {}): Service<SsoOwnConfig> {
  return defineService({
    name: 'sso',
    description: 'Signing keys, JWKS, the OAuth 2 token endpoint and OpenID Connect browser sign-in',
    tags: [
      {
        name: 'SSO',
        description: 'OAuth 2 token, revocation and introspection endpoints, registered clients, signing keys (JWKS), metadata and userinfo',
      },
    ],
    config: ssoConfig,
    migrations: SSO_MIGRATIONS,
    // Revocation events go out through the outbox: none is lost once its revocation committed.
    outbox: true,
    // Client registration takes an Idempotency-Key.
    idempotency: true,
    checks: ['database'],
    routes: async (app, { mode, config, logger, database, cache, bus, clients, provide, verifier, eventsCommitted, addReadinessCheck, every, subscribe, respond }) => {
      const prisma = createPrismaClient(PrismaClient, database);
      app.addHook('onClose', () => prisma.$disconnect());
      const keys = configuredKeyService(config, database, logger, prisma);
      await keys.ensureKey();
      // No token can be issued without a key that signs now (one that decrypts, too).
      addReadinessCheck('signingKey', {
        required: true,
        probe: async () => {
          await keys.signingKey();
          return {};
        },
      });
      const signer = createTokenSigner({
        keys,
        issuer: config.JWT_ISSUER,
        audience: config.JWT_AUDIENCE,
        accessTokenTtlSeconds: config.ACCESS_TOKEN_TTL_SECONDS,
      });
      // Every verifier of this process checks tokens against the key table: no JWKS fetch from itself.
      provide({ verificationKeys: keys.verificationKeys, systemToken: createSystemTokens(signer) });
      // Refresh tokens on the database; introspection of hot ones from memory (see live-cache.ts).
      const refreshTokens = await cacheLiveRefreshTokens(createRefreshTokenRepository(prisma, database), { cache, bus, logger });
      app.addHook('onClose', () => refreshTokens.stop());
      const repository = refreshTokens.repository;
      const revoker = createRevoker({
        repository,
        eventsCommitted,
        lifetimeSeconds: config.ACCESS_TOKEN_TTL_SECONDS + config.JWT_CLOCK_TOLERANCE_SECONDS,
      });
      // What every verifier seeds its revocations from: this process's in process, the others over the bus.
      const liveRevocations = liveRevocationsOf(repository);
      provide({ liveRevocations });
      await respond(LIVE_REVOCATIONS_REQUEST, (request) => liveRevocations(liveRevocationsRequestSchema.parse(request)));
      // API key verdicts and identities by id, from memory while provably unchanged (see grant-cache.ts).
      const grantCache = await createGrantCache({ credentials: clients.credentials, identities: clients.identity, cache, bus, logger });
      app.addHook('onClose', () => grantCache.stop());
      const throttle = createLoginThrottle(cache, logger);
      const trustedProxies = parseTrustedProxies(config.TRUST_PROXY);
      const oauthClients = createClientService(createClientRepository(prisma), { cache, logger });
      const browserRepository = createBrowserSignInRepository(database);
      // Sign-in through Google and GitHub, for the configured ones: the login page offers each.
      const federation = createFederation({ config, cache, identities: clients.identity, credentials: clients.credentials, logger });
      const browser = createBrowserSignIn({
        clients: oauthClients,
        repository: browserRepository,
        identities: grantCache.identities,
        credentials: clients.credentials,
        throttle,
        revoker,
        issuer: config.JWT_ISSUER,
        trustedProxies,
        logger,
        upstream: federation.providers,
      });
      const tokens = createTokenService({
        repository,
        revoker,
        verifier,
        signer,
        identities: grantCache.identities,
        credentials: grantCache.credentials,
        throttle,
        logger,
        refreshTokenTtlSeconds: config.REFRESH_TOKEN_TTL_SECONDS,
        issuer: config.JWT_ISSUER,
        registeredClient: clientAuthenticator(oauthClients),
        authorizationCode: createAuthorizationCodeGrant({
          clients: oauthClients,
          repository: browserRepository,
          identities: grantCache.identities,
          signer,
          revoker,
          logger,
        }),
      });

      await keyRoutes(app, { keys });
      await discoveryRoutes(app, { issuer: config.JWT_ISSUER });
      await app.register(tokenRoutes, { tokens, verifier, trustedProxies });
      await app.register(userinfoRoutes, { identities: grantCache.identities });
      await clientRoutes(app, { clients: oauthClients });
      const endSession = createEndSession({ browser, clients: oauthClients, verificationKeys: keys.verificationKeys, issuer: config.JWT_ISSUER });
      await app.register(browserRoutes, { browser, endSession });
      // Upstream sign-in (Google, GitHub): its callbacks end in `browser.completeSignIn` or `browser.renderSignInError`.
      await federationRoutes(app, { federation, browser, logger });

      await subscribeToCredentialEvents({ subscribe, logger, revoker });
      await subscribeToIdentityEvents({ subscribe, logger, revoker });
      // Every replica checks; the key lock and the newest key's age make only one of them rotate.
      every('scheduled key rotation', Math.min((config.SSO_KEY_ROTATION_INTERVAL_SECONDS * 1000) / 4, ROTATION_CHECK_MAX_MS), () => keys.rotateIfDue());
      // A used code is kept as long as the tokens it bought may be refreshed: its reuse still revokes them.
      every('purging finished authorization requests', PURGE_INTERVAL_MS, () => browserRepository.purge(new Date(Date.now() - config.REFRESH_TOKEN_TTL_SECONDS * 1000)));
      every('pruning expired revocations', PURGE_INTERVAL_MS, () => repository.pruneRevocations(Math.floor(Date.now() / 1000)));
      registerAdminBootstrap(app, { mode, config, clients, logger, addReadinessCheck, announce: options.announce });
    },
  });
}

export const ssoService = createSsoService();
