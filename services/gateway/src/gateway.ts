import {
  accessTokenVerifier,
  createApp,
  declareAuth,
  healthRoutes,
  parseTrustedProxies,
  RELEASE_VERSION,
  sendProblem,
  type App,
  type ConfigKey,
  type Logger,
  type PlatformConfig,
  type TokenVerifier,
} from '@app/platform';
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
];

export interface GatewayOptions {
  /** Verifies bearer tokens at the edge; default: sso's JWKS per the configuration, cached. */
  verifier?: TokenVerifier;
}

/**
 * The edge of split mode: checks tokens against the public allowlist, proxies /api/v1/* to
 * the services (bodies stream through) and serves their merged API docs.
 */
export async function buildGateway(config: PlatformConfig, logger: Logger, options: GatewayOptions = {}): Promise<App> {
  const app = await createApp({
    name: 'gateway',
    title: PLATFORM_TITLE,
    version: RELEASE_VERSION,
    logger,
    bodyLimit: config.BODY_LIMIT,
    description: PLATFORM_DESCRIPTION,
    auth: { verifier: options.verifier ?? accessTokenVerifier(config), edge: true },
  });
  // The gateway holds no state: it is ready whenever it can answer.
  await healthRoutes(app, { service: 'gateway', version: RELEASE_VERSION, checks: {} });
  // Proxied bodies stream through unparsed, so the edge enforces the declared size itself.
  app.addHook('onRequest', async (request, reply) => {
    const length = Number(request.headers['content-length'] ?? 0);
    if (length > config.BODY_LIMIT) {
      reply.header('connection', 'close');
      return sendProblem(request, reply, {
        status: 413,
        code: 'PLATFORM_BODY_TOO_LARGE',
        messageKey: 'error.bodyTooLarge',
        params: { limit: config.BODY_LIMIT },
      });
    }
  });
  const routes = routingTable(config);
  // Each service checks its own routes' auth; the edge check above already ran for these.
  await app.register(async (scope) => {
    declareAuth(scope as App, 'public');
    // The services document these paths themselves; the catch-all proxy routes are not API.
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true };
    });
    await registerProxies(scope as App, { routes, timeoutMs: config.UPSTREAM_TIMEOUT_MS, trustedProxies: parseTrustedProxies(config.TRUST_PROXY) });
  });
  await registerDocs(app, { upstreams: routes });
  return app;
}
