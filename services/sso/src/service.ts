import { fileURLToPath } from 'node:url';
import { LIVE_REVOCATIONS_REQUEST, liveRevocationsRequestSchema } from '@app/contracts';
import { createPrismaClient, defineService, parseTrustedProxies, type Service } from '@app/platform';
import { startAdminBootstrap, DEV_ADMIN_EMAIL } from './bootstrap/admin.js';
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

/**
 * Whether sso makes the development admin (admin@localhost, its generated password printed
 * once) when no BOOTSTRAP_ADMIN_* is set: in the all-in-one, and in development (split mode
 * on one machine, compose), never with NODE_ENV=production or test.
 */
const generatesDevAdmin = (config: { ALL_IN_ONE: boolean; NODE_ENV: string }) => config.ALL_IN_ONE || config.NODE_ENV === 'development';

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
    routes: async (app, { mode, config, logger, database, cache, bus, clients, provide, verifier, eventsCommitted, addReadinessCheck }) => {
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
      const repository = createRefreshTokenRepository(prisma);
      const revoker = createRevoker({
        repository,
        eventsCommitted,
        lifetimeSeconds: config.ACCESS_TOKEN_TTL_SECONDS + config.JWT_CLOCK_TOLERANCE_SECONDS,
      });
      // What every verifier seeds its revocations from: this process's in process, the others over the bus.
      const liveRevocations = liveRevocationsOf(repository);
      provide({ liveRevocations });
      const revocationsResponder = await bus.respond(LIVE_REVOCATIONS_REQUEST, (request) => liveRevocations(liveRevocationsRequestSchema.parse(request)));
      // API key verdicts and identities by id, from memory while provably unchanged (see grant-cache.ts).
      const grantCache = await createGrantCache({ credentials: clients.credentials, identities: clients.identity, cache, bus, logger });
      app.addHook('onClose', () => grantCache.stop());
      const throttle = createLoginThrottle(cache, logger);
      const trustedProxies = parseTrustedProxies(config.TRUST_PROXY);
      const oauthClients = createClientService(createClientRepository(prisma), { cache, logger });
      const browserRepository = createBrowserSignInRepository(prisma);
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
      await userinfoRoutes(app, { identities: grantCache.identities });
      await clientRoutes(app, { clients: oauthClients });
      const endSession = createEndSession({ browser, clients: oauthClients, verificationKeys: keys.verificationKeys, issuer: config.JWT_ISSUER });
      await app.register(browserRoutes, { browser, endSession });
      // Upstream sign-in (Google, GitHub): its callbacks end in `browser.completeSignIn` or `browser.renderSignInError`.
      await federationRoutes(app, { federation, browser, logger });

      const subscriptions = [
        await subscribeToCredentialEvents({ bus, logger, revoker }),
        await subscribeToIdentityEvents({ bus, logger, revoker }),
      ];
      // Every replica checks; the key lock and the newest key's age make only one of them rotate.
      const rotationCheckMs = Math.min((config.SSO_KEY_ROTATION_INTERVAL_SECONDS * 1000) / 4, ROTATION_CHECK_MAX_MS);
      const rotation = setInterval(() => {
        keys.rotateIfDue().catch((error: unknown) => logger.error({ err: error }, 'scheduled key rotation failed'));
      }, rotationCheckMs);
      rotation.unref();
      // A used code is kept as long as the tokens it bought may be refreshed: its reuse still revokes them.
      const purge = setInterval(() => {
        const before = new Date(Date.now() - config.REFRESH_TOKEN_TTL_SECONDS * 1000);
        browserRepository.purge(before).catch((error: unknown) => logger.warn({ err: error }, 'purging finished authorization requests failed'));
        repository.pruneRevocations(Math.floor(Date.now() / 1000)).catch((error: unknown) => logger.warn({ err: error }, 'pruning expired revocations failed'));
      }, PURGE_INTERVAL_MS);
      purge.unref();

      const adminEmail = config.BOOTSTRAP_ADMIN_EMAIL ?? (generatesDevAdmin(config) ? DEV_ADMIN_EMAIL : undefined);
      let bootstrap: ReturnType<typeof startAdminBootstrap> | undefined;
      if (adminEmail) {
        let adminPresent = false;
        // Ready once the first admin can sign in. Required in the all-in-one, whose one probe
        // says the platform serves every flow; in split mode sso's own probe leaves it out (the
        // bootstrap needs identity and credentials, which need sso's JWKS, served once ready)
        // and only reports it, so the platform's aggregated readiness waits for it.
        addReadinessCheck('bootstrapAdmin', {
          required: mode === 'all-in-one',
          probe: async () => {
            if (!adminPresent) throw new Error('the bootstrap admin does not exist yet');
            return {};
          },
        });
        // Once listening: in split mode identity and credentials verify sso's system token
        // against sso's JWKS, which it serves only then. The bootstrap retries until they answer.
        app.addHook('onListen', async () => {
          bootstrap ??= startAdminBootstrap({
            identities: clients.identity,
            credentials: clients.credentials,
            logger,
            email: adminEmail,
            password: config.BOOTSTRAP_ADMIN_PASSWORD,
            announce: options.announce ?? ((message) => console.log(message)),
          });
          void bootstrap.done.then((outcome) => {
            adminPresent = outcome === 'created' || outcome === 'exists';
          });
        });
      } else {
        logger.info('no bootstrap admin: set BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD to have sso create the first admin');
      }
      app.addHook('onClose', async () => {
        clearInterval(rotation);
        clearInterval(purge);
        bootstrap?.stop();
        await Promise.all([...subscriptions, revocationsResponder].map((subscription) => subscription.unsubscribe()));
      });
    },
  });
}

export const ssoService = createSsoService();
