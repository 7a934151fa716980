import { declareAuth, defineEdge, parseTrustedProxies, type App } from '@app/platform';
import { registerBodyLimit } from './body-limit.js';
import { gatewayConfig } from './config.js';
import { PLATFORM_DESCRIPTION, PLATFORM_TITLE, registerDocs } from './docs.js';
import { readEdgeRoutes } from './edge-routes.js';
import { routingTable } from './routing.js';

/**
 * The gateway, the edge of split mode: proxies /api/v1/* to the services (bodies stream
 * through), wanting a token and applying a body limit as each service's routes declare them
 * (read from their documents at start), and serves their merged API docs. It holds no state:
 * it is ready once it knows every service's routes, and its verifier every revocation.
 */
export const gatewayEdge = defineEdge({
  name: 'gateway',
  title: PLATFORM_TITLE,
  description: PLATFORM_DESCRIPTION,
  config: gatewayConfig,
  routes: async (app, { config, logger, addReadinessCheck }) => {
    // Loaded here, not at module load: the all-in-one imports this package for its docs and
    // config, and must not load the proxy (nor undici under it).
    const { registerProxies } = await import('./proxy.js');
    const routes = routingTable(config);
    const edgeRoutes = await readEdgeRoutes(routes, logger);
    app.addHook('onClose', async () => edgeRoutes.close());
    addReadinessCheck('routes', edgeRoutes.check);
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
      await registerProxies(scope as App, {
        routes,
        edgeRoutes,
        timeoutMs: config.UPSTREAM_TIMEOUT_MS,
        trustedProxies: parseTrustedProxies(config.TRUST_PROXY),
        cors: config.CORS_ORIGINS !== undefined,
      });
    });
    await registerDocs(app, { upstreams: routes });
  },
});
