import { INTERNAL_APIS, SERVICE_NAMES, SERVICES, type CallAuthority, type InternalApi, type ServiceClients, type ServiceName, type ServiceReadiness } from '@app/contracts';
import { accessTokenVerifier, type TokenVerifier } from '../auth/auth.js';
import {
  busRevocationSource,
  createRevocationSet,
  revocationsCheck,
  startRevocationFeed,
  type RevocationFeed,
  type RevocationSet,
} from '../auth/revocations.js';
import type { Subscription } from '../bus/bus.js';
import { outboxBacklog, startOutboxRelay } from '../bus/outbox.js';
import { trackOutboxBacklog } from '../metrics/metrics.js';
import { unparsedVariables, type SharedConfig } from '../config.js';
import { createHttpClients, type HttpClients } from '../clients/http-clients.js';
import { inProcessClient, registerInternalRoutes, type InternalImplementation } from '../clients/internal-api.js';
import { migrateService } from '../db/migrator.js';
import { cacheCheck, databaseCheck, type DependencyCheck } from '../health/checks.js';
import { healthRoutes, readinessOf } from '../health/health-routes.js';
import { createApp, type App } from '../http/app.js';
import { httpLimitsOf } from '../http/input-guards.js';
import { RELEASE_VERSION } from '../release.js';
import type { Dependencies } from '../runtime.js';
import type { Provided, Service, ServiceContext } from './define-service.js';

/**
 * What the services of one process share: one token verifier, what each offers the others
 * (its internal API, its capabilities), and the HTTP clients for the peers that run elsewhere.
 */
export interface ServiceHub {
  verifier: TokenVerifier;
  /** The revocations the verifier refuses, one set per process. */
  revocations: RevocationSet;
  /**
   * Keeps `revocations` current: seeded from the live revocations a service of the process
   * provides, else over `deps`' bus, then fed by the bus; resolves once the first seed was
   * tried. Called once the process's services are mounted (what they provide is known then);
   * later calls reuse the feed, `close` stops it.
   */
  followRevocations(deps: Pick<Dependencies, 'bus' | 'logger'>): Promise<void>;
  /** Readiness: required, failing until the revocations were read once. */
  revocationsCheck: DependencyCheck;
  clients: ServiceClients;
  /** Its peers in this process call `api` in process from now on. */
  serve<Api extends InternalApi>(api: Api, implementation: InternalImplementation<Api>): void;
  provide(provided: Provided): void;
  /** Registers a service of this process, whose readiness is then answered in-process. */
  addLocal(name: ServiceName, readiness: () => Promise<ServiceReadiness>): void;
  close(): Promise<void>;
}

/** A client of an internal API as the kit handles it, whichever API it is. */
type AnyClient = Record<string, (input: unknown, authority?: CallAuthority) => Promise<unknown>>;

/**
 * A client of an API with these `methods` that picks its implementation at each call, so the
 * order services register in (or whether a peer runs in this process at all) never matters:
 * in process when the peer serves it here, HTTP otherwise.
 */
function resolvingClient(methods: InternalApi['methods'], resolve: () => AnyClient): AnyClient {
  return Object.fromEntries(Object.keys(methods).map((name) => [name, (input: unknown, authority?: CallAuthority) => resolve()[name]!(input, authority)]));
}

export function createServiceHub(config: SharedConfig): ServiceHub {
  const provided: Provided = {};
  const served = new Map<ServiceName, AnyClient>();
  const revocations = createRevocationSet();
  let feed: Promise<RevocationFeed> | undefined;
  let followed: RevocationFeed | undefined;
  const local = new Map<ServiceName, () => Promise<ServiceReadiness>>();
  let http: HttpClients | undefined;
  const remote = () =>
    (http ??= createHttpClients({
      urls: Object.fromEntries(SERVICE_NAMES.map((name) => [name, config[SERVICES[name].urlVariable]])),
      systemToken: () => provided.systemToken?.(),
    }));
  const clients = {
    ...Object.fromEntries(
      INTERNAL_APIS.map(({ service, methods }) => [service, resolvingClient(methods, () => served.get(service) ?? (remote()[service] as unknown as AnyClient))]),
    ),
    readiness: (name: ServiceName) => local.get(name)?.() ?? remote().readiness(name),
  } as ServiceClients;
  return {
    verifier: accessTokenVerifier(config, () => provided.verificationKeys, revocations),
    revocations,
    followRevocations: async (deps) => {
      const source = provided.liveRevocations ?? busRevocationSource(deps.bus);
      feed ??= startRevocationFeed({ set: revocations, source, bus: deps.bus, logger: deps.logger });
      followed = await feed;
    },
    revocationsCheck: revocationsCheck(() => followed),
    clients,
    serve: (api, implementation) => void served.set(api.service, inProcessClient(api, implementation) as unknown as AnyClient),
    provide: (more) => Object.assign(provided, more),
    addLocal: (name, readiness) => local.set(name, readiness),
    close: async () => {
      await (await feed?.catch(() => undefined))?.stop();
      await http?.close();
    },
  };
}

function checksOf(service: Service, deps: Dependencies, hub: ServiceHub): Record<string, DependencyCheck> {
  return {
    ...Object.fromEntries(service.checks.map((name) => [name, name === 'database' ? databaseCheck(deps.database) : cacheCheck(deps.cache)])),
    revocations: hub.revocationsCheck,
  };
}

/**
 * Mounts one service on `app`: applies its migrations, starts its outbox relay, and registers
 * its routes in their own encapsulated context. The relay stops when the app closes. The checks
 * its routes add join its readiness report, `checks` (its own by default), and `processChecks`,
 * the probe of a process that runs it beside others. The caller then starts the hub's
 * revocation feed (`followRevocations`), once every service of the process is mounted.
 */
export async function mountService(
  app: App,
  service: Service,
  deps: Dependencies,
  hub: ServiceHub,
  mode: ServiceContext['mode'],
  readiness: { checks?: Record<string, DependencyCheck>; processChecks?: Record<string, DependencyCheck> } = {},
): Promise<void> {
  const unparsed = service.config ? unparsedVariables(service.config, deps.config) : [];
  if (unparsed.length > 0) {
    throw new Error(`${service.name}: the configuration was parsed without its schema (no ${unparsed.join(', ')}); parse it with loadConfig(env, [<its config>])`);
  }
  await migrateService(deps.database, service, deps.logger);
  const relay = service.outbox ? startOutboxRelay({ database: deps.database, bus: deps.bus, schema: service.name, logger: deps.logger }) : undefined;
  if (relay) {
    const untrack = trackOutboxBacklog(service.name, () => outboxBacklog(deps.database, service.name));
    app.addHook('onClose', async () => {
      untrack();
      await relay.stop();
    });
  }
  const checks = readiness.checks ?? checksOf(service, deps, hub);
  hub.addLocal(service.name, () => readinessOf(service.name, checks));
  const addReadinessCheck = (name: string, check: DependencyCheck) => {
    checks[name] = check;
    if (readiness.processChecks) readiness.processChecks[name] = check;
  };
  await app.register(async (scope) => {
    const housekeeping = serviceHousekeeping(deps, service.name);
    const context: ServiceContext = {
      name: service.name,
      mode,
      // Parsed with its schema (checked above): the shared variables and its own.
      config: deps.config,
      logger: deps.logger.child({ service: service.name }),
      database: deps.database,
      cache: deps.cache,
      bus: deps.bus,
      verifier: hub.verifier,
      clients: hub.clients,
      eventsCommitted: relay ? relay.wake : () => undefined,
      serve: async (api, implementation) => {
        if (api.service !== service.name) throw new Error(`${service.name} cannot serve ${api.service}'s internal API: a service serves only its own`);
        hub.serve(api, implementation);
        // Peers in this process call it in process; only a standalone service serves other processes.
        if (mode === 'standalone') await scope.register(async (routes) => registerInternalRoutes(routes as App, api, implementation));
      },
      provide: hub.provide,
      addReadinessCheck,
      ...housekeeping.context,
    };
    try {
      await service.routes(scope as App, context);
    } finally {
      // Added last, so it runs first (Fastify closes LIFO): timers and subscriptions stop
      // before the service's own hooks close what they use (its Prisma client, say).
      scope.addHook('onClose', housekeeping.stop);
    }
  });
}

/**
 * What a service runs beside its routes, owned by the kit: its timers and its bus
 * subscriptions, each stopped when the service closes.
 */
function serviceHousekeeping(deps: Dependencies, name: ServiceName): { context: Pick<ServiceContext, 'every' | 'subscribe' | 'respond'>; stop(): Promise<void> } {
  const logger = deps.logger.child({ service: name });
  const timers: NodeJS.Timeout[] = [];
  const subscriptions: Subscription[] = [];
  return {
    context: {
      every: (task, intervalMs, run) => {
        const timer = setInterval(() => {
          // Through a promise, so a task that throws at once is logged like one that rejects.
          Promise.resolve().then(run).catch((error: unknown) => logger.error({ err: error, task }, `${task} failed`));
        }, intervalMs);
        timer.unref();
        timers.push(timer);
      },
      subscribe: async (pattern, handler, options) => void subscriptions.push(await deps.bus.subscribe(pattern, handler, options)),
      respond: async (subject, responder) => void subscriptions.push(await deps.bus.respond(subject, responder)),
    },
    stop: async () => {
      for (const timer of timers) clearInterval(timer);
      await Promise.all(subscriptions.map((subscription) => subscription.unsubscribe()));
    },
  };
}

/**
 * One service as its own app (split mode, and service tests): its probes on /health/*, its
 * OpenAPI document on /openapi.json, and its routes. Peers are reached over HTTP.
 */
export async function buildServiceApp<Own extends object>(service: Service<Own>, deps: Dependencies<SharedConfig & Own>, options: { hub?: ServiceHub } = {}): Promise<App> {
  const hub = options.hub ?? createServiceHub(deps.config);
  const app = await createApp({
    name: service.name,
    version: RELEASE_VERSION,
    logger: deps.logger,
    bodyLimit: deps.config.BODY_LIMIT,
    limits: httpLimitsOf(deps.config),
    description: service.description,
    tags: service.tags,
    auth: { verifier: hub.verifier, edge: false },
    metrics: deps.config.METRICS === 'on',
  });
  if (!options.hub) app.addHook('onClose', () => hub.close());
  const checks = checksOf(service, deps, hub);
  await healthRoutes(app, { service: service.name, version: RELEASE_VERSION, checks });
  await mountService(app, service, deps, hub, 'standalone', { checks });
  await hub.followRevocations(deps);
  return app;
}

export interface PlatformAppOptions {
  /** Registers what the edge adds besides auth (the docs UI); runs after every service. */
  edge?: (app: App) => Promise<void>;
  title?: string;
  description?: string;
}

/**
 * Every service in ONE Fastify instance (the all-in-one): the edge's checks, each service's
 * routes, and one pair of probes for the process. Cross-service calls are function calls.
 */
export async function buildPlatformApp(services: readonly Service[], deps: Dependencies, options: PlatformAppOptions = {}): Promise<App> {
  const hub = createServiceHub(deps.config);
  const app = await createApp({
    name: 'platform',
    title: options.title,
    version: RELEASE_VERSION,
    logger: deps.logger,
    bodyLimit: deps.config.BODY_LIMIT,
    limits: httpLimitsOf(deps.config),
    description: options.description,
    tags: services.flatMap((service) => service.tags ?? []),
    auth: { verifier: hub.verifier, edge: true },
    metrics: deps.config.METRICS === 'on',
    corsOrigins: deps.config.CORS_ORIGINS,
  });
  app.addHook('onClose', () => hub.close());
  // The process's probe: its database and cache, the revocations it knows, and what each
  // service adds (such as a signing key, or a first admin), so it is ready only once every
  // documented flow can be served.
  const processChecks: Record<string, DependencyCheck> = {
    database: databaseCheck(deps.database),
    cache: cacheCheck(deps.cache),
    revocations: hub.revocationsCheck,
  };
  await healthRoutes(app, { service: 'platform', version: RELEASE_VERSION, checks: processChecks });
  for (const service of services) await mountService(app, service, deps, hub, 'all-in-one', { processChecks });
  // After the services: one mounted above may provide the live revocations in process.
  await hub.followRevocations(deps);
  if (options.edge) await options.edge(app);
  return app;
}
