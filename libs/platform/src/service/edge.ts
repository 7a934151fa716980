import type { ServiceName } from '@app/contracts';
import type { TokenVerifier } from '../auth/auth.js';
import type { ConfigSchema, SharedConfig } from '../config.js';
import type { DependencyCheck } from '../health/checks.js';
import { healthRoutes } from '../health/health-routes.js';
import { createApp, type App } from '../http/app.js';
import { httpLimitsOf } from '../http/input-guards.js';
import type { Logger } from '../logger.js';
import { RELEASE_VERSION } from '../release.js';
import type { Dependencies } from '../runtime.js';
import { createServiceHub } from './compose.js';

/** What an edge's routes are built with: typed config (the shared variables and its own, `Own`) and the process's verifier. */
export interface EdgeContext<Own extends object = object> {
  name: ServiceName;
  config: SharedConfig & Own;
  logger: Logger;
  /** The process's one token verifier, refusing what the bus says is revoked. */
  verifier: TokenVerifier;
  /** Adds a check to its readiness report, before the revocations: what it needs before it can pass requests on. */
  addReadinessCheck(name: string, check: DependencyCheck): void;
}

/**
 * An edge, declared once: a process that holds no state and fronts the others. It has no
 * database and no cache; the kit gives it the bus (for revocations), a verifier fed from it,
 * its probes and the edge's hooks (auth before parsing, CORS), and runs it alone (`runEdge`).
 */
export interface Edge<Own extends object = object> {
  name: ServiceName;
  /** The title of its OpenAPI document, when it is not its name. */
  title?: string;
  /** One line for its OpenAPI document. */
  description: string;
  /** Its own variables, parsed beside the shared ones. */
  config?: ConfigSchema<Own>;
  /**
   * Registers its routes on the root instance, after its probes: an edge fronts every request
   * of its process, so a hook it adds (a body limit of its own) sees them all.
   */
  routes(app: App, context: EdgeContext<Own>): Promise<void>;
}

/** Declares an edge. Its name is the registry's (`@app/contracts`), which also holds its port. */
export function defineEdge<Own extends object = object>(edge: Edge<Own>): Edge<Own> {
  return edge;
}

/** What an edge is built from: the shared ports minus the state it never keeps. */
export type EdgeDependencies<Config extends SharedConfig = SharedConfig> = Pick<Dependencies<Config>, 'config' | 'logger' | 'bus'>;

/**
 * One edge as its own app: the process's verifier, seeded and fed over `deps.bus`, its probes
 * on /health/* (ready once its own checks and the revocations are), then its routes. `release`
 * runs on close once the revocation feed has stopped: what the caller opened for this app alone.
 */
export async function buildEdgeApp<Own extends object>(
  edge: Edge<Own>,
  deps: EdgeDependencies<SharedConfig & Own>,
  options: { release?: () => Promise<void> } = {},
): Promise<App> {
  const hub = createServiceHub(deps.config);
  // No service of this process provides revocations: they come over the bus, before it serves.
  await hub.followRevocations(deps);
  const app = await createApp({
    name: edge.name,
    title: edge.title,
    version: RELEASE_VERSION,
    logger: deps.logger,
    bodyLimit: deps.config.BODY_LIMIT,
    limits: httpLimitsOf(deps.config),
    description: edge.description,
    auth: { verifier: hub.verifier, edge: true },
    metrics: deps.config.METRICS === 'on',
    corsOrigins: deps.config.CORS_ORIGINS,
  });
  app.addHook('onClose', async () => {
    await hub.close();
    await options.release?.();
  });
  // Read at each probe: the edge's own checks join while its routes are registered, the revocations last.
  const checks: Record<string, DependencyCheck> = {};
  await healthRoutes(app, { service: edge.name, version: RELEASE_VERSION, checks });
  await edge.routes(app, {
    name: edge.name,
    config: deps.config,
    logger: deps.logger,
    verifier: hub.verifier,
    addReadinessCheck: (name, check) => void (checks[name] = check),
  });
  checks.revocations = hub.revocationsCheck;
  return app;
}
