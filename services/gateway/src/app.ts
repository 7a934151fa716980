import { createApp, RELEASE_VERSION, sendProblem, type App, type Logger, type PlatformConfig, type TokenVerifier } from '@app/platform';
import { registerDocs } from './docs.js';
import { edgeVerifier, registerEdgeAuth } from './edge-auth.js';
import { registerProxies } from './proxy.js';
import type { Route } from './routing.js';

export interface GatewayDependencies {
  config: PlatformConfig;
  logger: Logger;
}

export interface GatewayOptions {
  routes: Route[];
  /** Verifies bearer tokens at the edge; default: sso's JWKS per the configuration, with a verified-token cache. */
  verifier?: TokenVerifier;
}

/** The edge: routes /api/v1/* to the services and serves the merged API docs. */
export async function buildApp(deps: GatewayDependencies, options: GatewayOptions): Promise<App> {
  const app = await createApp({
    name: 'gateway',
    version: RELEASE_VERSION,
    logger: deps.logger,
    bodyLimit: deps.config.BODY_LIMIT,
  });
  app.get('/health/liveness', { schema: { hide: true } }, async () => ({
    status: 'active',
    service: 'gateway',
    version: RELEASE_VERSION,
    date: new Date().toISOString(),
  }));
  // The gateway holds no state: it is ready whenever it can answer.
  app.get('/health/readiness', { schema: { hide: true } }, async () => ({
    status: 'active',
    service: 'gateway',
    version: RELEASE_VERSION,
    date: new Date().toISOString(),
    dependencies: {},
  }));
  // Proxied bodies stream through unparsed, so the edge enforces the declared size itself.
  app.addHook('onRequest', async (request, reply) => {
    const length = Number(request.headers['content-length'] ?? 0);
    if (length > deps.config.BODY_LIMIT) {
      reply.header('connection', 'close');
      return sendProblem(request, reply, {
        status: 413,
        code: 'BODY_TOO_LARGE',
        messageKey: 'error.bodyTooLarge',
        params: { limit: deps.config.BODY_LIMIT },
      });
    }
  });
  registerEdgeAuth(app, options.verifier ?? edgeVerifier(deps.config));
  await registerProxies(app, { routes: options.routes, timeoutMs: deps.config.UPSTREAM_TIMEOUT_MS });
  await registerDocs(
    app,
    options.routes,
    'One gateway in front of the identity, credentials, sso, crud and health services. ' +
      'Errors are RFC 9457 problem+json, localized by Accept-Language.',
  );
  return app;
}
