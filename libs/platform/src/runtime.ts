import { join } from 'node:path';
import { createLocalBus } from './bus/local-bus.js';
import { createNatsBus } from './bus/nats-bus.js';
import type { Bus } from './bus/bus.js';
import type { Cache } from './cache/cache.js';
import { createMemoryCache } from './cache/memory-cache.js';
import { createRedisCache } from './cache/redis-cache.js';
import { SERVICES } from '@app/contracts';
import { ConfigError, loadConfig, type ConfigOf, type ConfigSchema, type SharedConfig } from './config.js';
import type { Database } from './db/database.js';
import { migrateService } from './db/migrator.js';
import { lowerThreadPoolPriority } from './thread-pool-priority.js';
import { openPGlite } from './db/pglite.js';
import { openPostgres } from './db/postgres.js';
import type { App } from './http/app.js';
import { createLogger, type Logger } from './logger.js';
import { startManagementServer, type ManagementServer } from './metrics/management.js';
import { buildServiceApp } from './service/compose.js';
import type { Service } from './service/define-service.js';
import { buildEdgeApp, type Edge } from './service/edge.js';

/** What a service is built from: typed config (the shared variables, and the services' own) and the adapters behind the ports. */
export interface Dependencies<Config extends SharedConfig = SharedConfig> {
  config: Config;
  logger: Logger;
  database: Database;
  cache: Cache;
  bus: Bus;
}

/**
 * Opens the database, cache and bus the configuration names: Postgres, Redis and NATS when
 * their URLs are set, the embedded defaults otherwise. The caller owns them and closes them
 * (`closeDependencies`) after every service using them has stopped.
 */
export async function openDependencies<Config extends SharedConfig>(
  config: Config,
  logger: Logger,
  options: { name: string; cacheKeyPrefix?: string; pgliteDir?: string } = { name: 'platform' },
): Promise<Dependencies<Config>> {
  const database = config.DATABASE_URL
    ? openPostgres({ url: config.DATABASE_URL, poolMax: config.DATABASE_POOL_MAX, queryTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS, logger })
    : await openPGlite({ dataDir: options.pgliteDir ?? join(config.DATA_DIR, 'pglite'), logger });
  const cache = config.REDIS_URL
    ? await createRedisCache({
        url: config.REDIS_URL,
        logger,
        keyPrefix: (config.CACHE_KEY_PREFIX ?? '') + (options.cacheKeyPrefix ?? '') || undefined,
      })
    : createMemoryCache({ maxEntries: config.CACHE_MAX_ENTRIES });
  const bus = await openBus(config, logger, options.name);
  logger.info(
    { database: database.kind, cache: cache.kind, bus: bus.kind },
    config.DATABASE_URL ? 'dependencies opened' : 'dependencies opened (embedded database)',
  );
  return { config, logger, database, cache, bus };
}

/** Opens the bus the configuration names: NATS JetStream when NATS_URL is set (as client `name`), in process otherwise. */
export async function openBus(config: SharedConfig, logger: Logger, name: string): Promise<Bus> {
  return config.NATS_URL ? await createNatsBus({ servers: config.NATS_URL, logger, name, stream: config.NATS_STREAM }) : createLocalBus({ logger });
}

/**
 * Names what a shutdown is waiting for: `step` runs one part of it, so a shutdown that times
 * out can say which parts had not finished.
 */
export type ShutdownStep = <T>(name: string, work: () => Promise<T>) => Promise<T>;

/** A step that only runs its part: for a close no signal handler is timing. */
export const untrackedStep: ShutdownStep = (_name, work) => work();

export async function closeDependencies(deps: Dependencies, step: ShutdownStep = untrackedStep): Promise<void> {
  await Promise.allSettled([step('bus', () => deps.bus.close()), step('cache', () => deps.cache.close())]);
  await step('database', () => deps.database.close());
}

/** Stops listening: the public port (draining its requests, closing its services) and the management port. */
export async function closeListeners(step: ShutdownStep, running: RunningApp, management: ManagementServer | undefined): Promise<void> {
  await Promise.all([step('requests and services', () => running.close()), step('management port', async () => management?.close())]);
}

export interface RunningApp {
  app: App;
  /** Base URL it listens on, e.g. http://127.0.0.1:3001. */
  url: string;
  close(): Promise<void>;
}

/** Starts an already built app listening; port 0 picks a free port. */
export async function listenApp(name: string, app: App, listen: { host: string; port: number }): Promise<RunningApp> {
  await app.listen({ host: listen.host, port: listen.port, listenTextResolver: (address) => `${name} listening on ${address}` });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : listen.port;
  const host = listen.host === '0.0.0.0' || listen.host === '::' ? '127.0.0.1' : listen.host;
  return { app, url: `http://${host}:${port}`, close: () => app.close() };
}

/**
 * Opens the process's management port for /metrics: `port` when given, else MANAGEMENT_PORT,
 * or a free one when PORT is 0 (a process asked for any public port, as tests do, must not
 * contend for the fixed management one); nothing with METRICS=off.
 */
export async function openManagementPort(
  config: SharedConfig,
  logger: Logger,
  port = config.PORT === 0 ? 0 : config.MANAGEMENT_PORT,
): Promise<ManagementServer | undefined> {
  return config.METRICS === 'on' ? startManagementServer({ host: config.HOST, port, logger }) : undefined;
}

/**
 * A signal this soon after the first is the same Ctrl-C seen twice, not a second one: the
 * terminal sends SIGINT to the whole foreground process group and `npm start` forwards its
 * own copy to its child as well.
 */
const DUPLICATE_SIGNAL_MS = 1000;

/**
 * Calls `stop` on SIGTERM or SIGINT, once; exits 0 when it finishes, 1 after the timeout (and
 * logs the steps it was still waiting for). A second signal (not the duplicate copy of the
 * first) exits 1 at once.
 */
export function closeOnSignals(stop: (step: ShutdownStep) => Promise<void>, logger: Logger, timeoutMs: number): void {
  const waitingFor = new Set<string>();
  const step: ShutdownStep = async (name, work) => {
    waitingFor.add(name);
    try {
      return await work();
    } finally {
      waitingFor.delete(name);
    }
  };
  let firstAt: number | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (firstAt !== undefined) {
      if (Date.now() - firstAt < DUPLICATE_SIGNAL_MS) return;
      logger.warn({ signal }, 'second signal: exiting without waiting for the shutdown');
      process.exit(1);
    }
    const startedAt = (firstAt = Date.now());
    logger.info({ signal }, 'shutting down: draining in-flight requests');
    const timer = setTimeout(() => {
      logger.error({ waitingFor: [...waitingFor] }, 'shutdown timed out; exiting anyway');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    stop(step).then(
      () => {
        logger.info({ ms: Date.now() - startedAt }, 'shut down');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** Reads the environment (the shared schema and `schemas`), or prints what is wrong with it and exits. */
export function loadConfigOrExit<const Schemas extends readonly ConfigSchema[] = []>(schemas?: Schemas): ConfigOf<Schemas> {
  try {
    return loadConfig(undefined, schemas);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}

/**
 * The migration entry of one service (`node services/<name>/dist/migrate.js`): applies its
 * pending migrations and exits, as a Kubernetes Job does before a rollout.
 */
export async function runMigrations(service: Service): Promise<void> {
  const config = loadConfigOrExit(service.config ? [service.config] : []);
  const logger = createLogger(config);
  if (!config.DATABASE_URL) {
    logger.fatal('DATABASE_URL is not set: standalone migrations need the real database');
    process.exit(78);
  }
  const database = openPostgres({ url: config.DATABASE_URL, poolMax: 1, logger });
  try {
    const result = await migrateService(database, service, logger);
    if (result) logger.info({ schema: service.name, applied: result.applied.length, skipped: result.skipped.length }, 'migrations done');
  } catch (error) {
    logger.fatal({ err: error }, 'migrations failed');
    process.exitCode = 1;
  } finally {
    await database.close();
  }
}

/**
 * Puts libuv's thread pool below the event loop (THREADPOOL_NICE), once per process, before it
 * serves; a process that cannot (not Linux, or not allowed) serves anyway at one priority.
 */
export async function prioritizeEventLoop(config: SharedConfig, logger: Logger): Promise<void> {
  try {
    const threads = await lowerThreadPoolPriority(config.THREADPOOL_NICE);
    if (threads.length > 0) logger.debug({ threads: threads.length, nice: config.THREADPOOL_NICE }, 'thread pool below the event loop');
  } catch (error) {
    logger.warn({ err: error }, 'could not lower the thread pool priority; password hashes compete with requests');
  }
}

/**
 * Runs one built app as a process: listens on PORT (or its registry port) and on its
 * management port, and on SIGTERM or SIGINT drains and closes it, then whatever `onClosed` releases.
 */
export async function serve(
  name: string,
  config: SharedConfig,
  logger: Logger,
  build: () => Promise<App>,
  options: { defaultPort: number; onClosed?: (step: ShutdownStep) => Promise<void> },
): Promise<RunningApp> {
  let running: RunningApp;
  let management: ManagementServer | undefined;
  await prioritizeEventLoop(config, logger);
  try {
    running = await listenApp(name, await build(), { host: config.HOST, port: config.PORT ?? options.defaultPort });
    management = await openManagementPort(config, logger);
  } catch (error) {
    logger.fatal({ err: error }, `${name} failed to start`);
    await options.onClosed?.(untrackedStep).catch(() => undefined);
    process.exit(1);
  }
  closeOnSignals(
    async (step) => {
      await closeListeners(step, running, management);
      await options.onClosed?.(step);
    },
    logger,
    config.SHUTDOWN_TIMEOUT_MS,
  );
  return running;
}

/** The standalone entry of one service: what `node services/<name>/dist/main.js` runs. */
export async function runService<Own extends object>(service: Service<Own>): Promise<void> {
  const config = loadConfigOrExit(service.config ? [service.config] : []) as SharedConfig & Own;
  const logger = createLogger(config);
  const deps = await openDependencies(config, logger, { name: service.name });
  await serve(service.name, config, logger, () => buildServiceApp(service, deps), {
    defaultPort: SERVICES[service.name].port,
    onClosed: (step) => closeDependencies(deps, step),
  });
}

/**
 * The entry of an edge (`node services/<name>/dist/main.js`): it keeps no state, so only the
 * bus is opened (for the revocations its verifier refuses), never a database or a cache.
 */
export async function runEdge<Own extends object>(edge: Edge<Own>): Promise<void> {
  const config = loadConfigOrExit(edge.config ? [edge.config] : []) as SharedConfig & Own;
  const logger = createLogger(config);
  const bus = await openBus(config, logger, edge.name);
  await serve(edge.name, config, logger, () => buildEdgeApp(edge, { config, logger, bus }), {
    defaultPort: SERVICES[edge.name].port,
    onClosed: (step) => step('bus', () => bus.close()),
  });
}
