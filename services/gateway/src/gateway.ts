import {
  accessTokenVerifier,
  createApp,
  busRevocationSource,
  createLocalBus,
  createRevocationSet,
  revocationsCheck,
  startRevocationFeed,
  type Bus,
  declareAuth,
  healthRoutes,
  parseTrustedProxies,
  RELEASE_VERSION,
  httpLimitsOf,
  type App,
  type Logger,
  type TokenVerifier,
} from '@app/platform';
import { registerBodyLimit } from './body-limit.js';
import type { GatewayConfig } from './config.js';
import { PLATFORM_DESCRIPTION, PLATFORM_TITLE, registerDocs } from './docs.js';
import { readEdgeRoutes } from './edge-routes.js';
import { registerProxies } from './proxy.js';
import { routingTable } from './routing.js';

export interface GatewayOptions {
  /** Verifies bearer tokens at the edge; default: sso's JWKS per the configuration, cached, checked against revocations. */
  verifier?: TokenVerifier;
  /**
   * Where the default verifier learns of revocations: the bus, over which it asks sso for the
   * live ones (seed) and hears sso's broadcast. main.ts opens NATS per the configuration;
   * without it the gateway uses an in-process bus, where no sso answers nor publishes.
   */
  revocationBus?: Bus;
}

/**
 * The edge of split mode: proxies /api/v1/* to the services (bodies stream through), wanting
 * a token and applying a body limit as each service's routes declare them (read from their
 * documents at start), and serves their merged API docs.
 */
export async function buildGateway(config: GatewayConfig, logger: Logger, options: GatewayOptions = {}): Promise<App> {
  const revocations = createRevocationSet();
  const bus = options.revocationBus ?? createLocalBus({ logger });
  const feed = options.verifier ? undefined : await startRevocationFeed({ set: revocations, source: busRevocationSource(bus), bus, logger });
  const routes = routingTable(config);
  const edgeRoutes = await readEdgeRoutes(routes, logger);
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
    edgeRoutes.close();
    await feed?.stop();
    if (!options.revocationBus) await bus.close();
  });
  // The gateway holds no state: it is ready once it knows every service's routes, and its verifier every revocation.
  await healthRoutes(app, {
    service: 'gateway',
    version: RELEASE_VERSION,
    checks: { routes: edgeRoutes.check, ...(feed ? { revocations: revocationsCheck(() => feed) } : {}) },
  });
  registerBodyLimit(app, config.BODY_LIMIT);
  // Each service checks its own routes' auth; the edge check (from their declarations) already ran for these.
  await app.register(async (scope) => {
    declareAuth(scope as App, 'public');
    // The services document these paths themselves; the catch-all proxy routes are not API.
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true };
    });
    // The proxies bring their own pass-through parser for JSON in place of the platform's.
    scope.removeContentTypeParser('application/json');
    await registerProxies(scope as App, { routes, edgeRoutes, timeoutMs: config.UPSTREAM_TIMEOUT_MS, trustedProxies: parseTrustedProxies(config.TRUST_PROXY), cors: config.CORS_ORIGINS !== undefined });
  });
  await registerDocs(app, { upstreams: routes });
  return app;
}
