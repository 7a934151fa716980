import {
  accessTokenVerifier,
  createApp,
  createLocalBus,
  createMemoryCache,
  createRevocationSet,
  startRevocationFeed,
  type Bus,
  type Cache,
  declareAuth,
  healthRoutes,
  parseTrustedProxies,
  RELEASE_VERSION,
  httpLimitsOf,
  type App,
  type ConfigKey,
  type Logger,
  type PlatformConfig,
  type TokenVerifier,
} from '@app/platform';
import { registerBodyLimit } from './body-limit.js';
import { PLATFORM_DESCRIPTION, PLATFORM_TITLE, registerDocs } from './docs.js';
import { registerProxies } from './proxy.js';
import { routingTable } from './routing.js';

/** The gateway's own slice of the environment, besides the shared one. */
export const GATEWAY_CONFIG: readonly ConfigKey[] = [
  'PLATFORM_SERVICES',
  'UPSTREAM_TIMEOUT_MS',
  'IDENTITY_URL',
  'CREDENTIALS_URL',
  'CRUD_URL',
  'HEALTH_URL',
  // Revocations: the edge's verifier seeds its set from the cache and follows the bus.
  'REDIS_URL',
  'NATS_URL',
];

export interface GatewayOptions {
  /** Verifies bearer tokens at the edge; default: sso's JWKS per the configuration, cached, checked against revocations. */
  verifier?: TokenVerifier;
  /**
   * Where the default verifier learns of revocations: the shared cache (seed) and the bus
   * (sso's broadcast). main.ts opens Redis and NATS per the configuration; without them the
   * gateway uses in-process ones, which only hear revocations published in this process.
   */
  revocationSources?: { cache: Cache; bus: Bus };
}

/**
 * The edge of split mode: checks tokens against the public allowlist, proxies /api/v1/* to
 * the services (bodies stream through) and serves their merged API docs.
 */
export async function buildGateway(config: PlatformConfig, logger: Logger, options: GatewayOptions = {}): Promise<App> {
  const revocations = createRevocationSet();
  const sources = options.revocationSources ?? { cache: createMemoryCache({ maxEntries: 1 }), bus: createLocalBus({ logger }) };
  const feed = options.verifier ? undefined : await startRevocationFeed({ set: revocations, ...sources, logger });
  const app = await createApp({
    name: 'gateway',
    title: PLATFORM_TITLE,
    version: RELEASE_VERSION,
    logger,
    bodyLimit: config.BODY_LIMIT,
    limits: httpLimitsOf(config),
    description: PLATFORM_DESCRIPTION,
    auth: { verifier: options.verifier ?? accessTokenVerifier(config, undefined, revocations), edge: true },
    metrics: config.METRICS === 'on',
    corsOrigins: config.CORS_ORIGINS,
  });
  app.addHook('onClose', async () => {
    await feed?.stop();
    if (!options.revocationSources) await Promise.all([sources.bus.close(), sources.cache.close()]);
  });
  // The gateway holds no state: it is ready whenever it can answer.
  await healthRoutes(app, { service: 'gateway', version: RELEASE_VERSION, checks: {} });
  registerBodyLimit(app, config.BODY_LIMIT);
  const routes = routingTable(config);
  // Each service checks its own routes' auth; the edge check above already ran for these.
  await app.register(async (scope) => {
    declareAuth(scope as App, 'public');
    // The services document these paths themselves; the catch-all proxy routes are not API.
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true };
    });
    // The proxies bring their own pass-through parser for JSON in place of the platform's.
    scope.removeContentTypeParser('application/json');
    await registerProxies(scope as App, { routes, timeoutMs: config.UPSTREAM_TIMEOUT_MS, trustedProxies: parseTrustedProxies(config.TRUST_PROXY), cors: config.CORS_ORIGINS !== undefined });
  });
  await registerDocs(app, { upstreams: routes });
  return app;
}
