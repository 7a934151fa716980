import type { Capabilities, InternalApi, ServiceClients, ServiceName } from '@app/contracts';
import { z } from 'zod';
import type { TokenVerifier } from '../auth/auth.js';
import type { Bus, BusHandler, Responder, SubscribeOptions } from '../bus/bus.js';
import type { Cache } from '../cache/cache.js';
import type { InternalImplementation } from '../clients/internal-api.js';
import type { ConfigSchema, SharedConfig } from '../config.js';
import type { Database, SqlSession } from '../db/database.js';
import type { DependencyCheck } from '../health/checks.js';
import type { ApiTag, App } from '../http/app.js';
import type { Logger } from '../logger.js';

/**
 * What a service's routes are built with: typed config (the shared variables and its own,
 * `Own`), the ports, the verifier and its peers.
 */
export interface ServiceContext<Own extends object = object> {
  name: ServiceName;
  /**
   * `all-in-one`: mounted beside every other service in one instance, whose peers call it in
   * process; internal (service-to-service) routes are not registered there. `standalone`: its
   * own process (split mode), called over HTTP on its internal routes.
   */
  mode: 'all-in-one' | 'standalone';
  config: SharedConfig & Own;
  logger: Logger;
  database: Database;
  cache: Cache;
  bus: Bus;
  /** The process's one token verifier (cached; in-process keys where a service of the process provides them). */
  verifier: TokenVerifier;
  /** Typed clients of the other services: in-process where they run here, HTTP otherwise. */
  clients: ServiceClients;
  /** Tells the outbox relay a change committed (publish now, not at the next poll). */
  eventsCommitted(): void;
  /**
   * Serves its internal API (declared in `@app/contracts`) with `implementation`: its peers in
   * this process call it in process; in its own process (`standalone`) its routes serve the
   * others over HTTP too.
   */
  serve<Api extends InternalApi>(api: Api, implementation: InternalImplementation<Api>): Promise<void>;
  /** Offers the other services of this process what this one provides (see `Provided`). */
  provide(provided: Provided): void;
  /**
   * Adds a check to its readiness report (and, in the all-in-one, to the process's probe):
   * what it needs besides its database before it can serve its documented flows.
   */
  addReadinessCheck(name: string, check: DependencyCheck): void;
  /**
   * Runs `task` every `intervalMs` while the service runs: the timer holds no process open,
   * a failure is logged (`<name> failed`) and the next run comes anyway, and it stops when
   * the service closes. For housekeeping (rotating keys, purging what expired).
   */
  every(name: string, intervalMs: number, task: () => Promise<unknown>): void;
  /** Subscribes to the bus (`Bus.subscribe`) for as long as the service runs: it unsubscribes when the service closes. */
  subscribe(pattern: string, handler: BusHandler, options: SubscribeOptions): Promise<void>;
  /** Answers requests on the bus (`Bus.respond`) for as long as the service runs. */
  respond(subject: string, responder: Responder): Promise<void>;
}

/** What a service offers the others of its process, instead of them reaching it over the network. */
export type Provided = Partial<Capabilities>;

/** A service, declared once; the kit runs it alone (`runService`) or beside the others (`buildPlatformApp`). */
export interface Service<Own extends object = object> {
  name: ServiceName;
  /** One line for its OpenAPI document. */
  description: string;
  /** The tags of its public routes, described (the all-in-one documents every service's). */
  tags?: readonly ApiTag[];
  /**
   * Its own variables, parsed beside the shared ones (`sharedConfig`) in every mode: with the
   * shared schema alone when it runs alone, with every service's in the all-in-one.
   */
  config?: ConfigSchema<Own>;
  /** Its Prisma Migrate folder, for its own tables; the kit's (outbox, idempotency) are not in it. */
  migrations?: string;
  /**
   * It publishes events through a transactional outbox in its schema (a relay runs beside it).
   * The kit's migrations create the table, before the service's own.
   */
  outbox?: boolean;
  /** Its creates take an Idempotency-Key: the kit's migrations create the table of their answers. */
  idempotency?: boolean;
  /**
   * Holds its migrated schema to what its code declares (tables described by declarations),
   * after every migration run (at start and in the migration job); throws, naming the fix, to stop.
   */
  checkSchema?(session: SqlSession, schema: string): Promise<void>;
  /** Dependencies its readiness reports: the database is required, the cache only degrades it. */
  checks: readonly ('database' | 'cache')[];
  /** Registers its routes on an encapsulated instance; runs once per process. */
  routes(app: App, context: ServiceContext<Own>): Promise<void>;
}

/**
 * Declares a service. Its name is the registry's (`@app/contracts`), which also holds its
 * port, URL variable and public prefixes.
 */
export function defineService<Own extends object = object>(service: Service<Own>): Service<Own> {
  return service;
}

/** What a service without variables of its own parses beside the shared ones: nothing. */
const NO_OWN_CONFIG: ConfigSchema = z.object({});

/** The config schema of each service of `Services`, typed with its own variables. */
type SchemasOf<Services extends readonly Service[]> = { [K in keyof Services]: ConfigSchema<Services[K] extends Service<infer Own> ? Own : never> };

/**
 * The config schemas of `services`, in their order: what a process that runs all of them
 * parses beside the shared one (`loadConfig(env, configSchemasOf(services))`).
 */
export function configSchemasOf<const Services extends readonly Service[]>(services: Services): SchemasOf<Services> {
  return services.map((service) => service.config ?? NO_OWN_CONFIG) as SchemasOf<Services>;
}
