import { credentialsService } from '@app/credentials';
import { crudService } from '@app/crud-service';
// The docs and the config only: the gateway loads its proxy (and undici under it) when its
// routes are built, which never happens in the all-in-one (test/entry.test.ts).
import { gatewayConfig, PLATFORM_DESCRIPTION, PLATFORM_TITLE, registerDocs } from '@app/gateway';
import { healthService } from '@app/health';
import { identityService } from '@app/identity';
import { ssoService } from '@app/sso';
import {
  buildPlatformApp,
  configSchemasOf,
  closeDependencies,
  closeListeners,
  type ShutdownStep,
  untrackedStep,
  listenApp,
  openDependencies,
  openManagementPort,
  type App,
  type Dependencies,
  type Logger,
  type ConfigOf,
  type Service,
  type ServiceName,
} from '@app/platform';

/** The domain services this build can run (mounted in PLATFORM_SERVICES order). */
const BUILT_SERVICES = [identityService, credentialsService, ssoService, crudService] as const;

/**
 * The variables of the whole platform, beside the shared ones: every service's own, and the
 * gateway's (one environment serves both modes). The all-in-one parses them once, at start;
 * the split launcher does too, before it starts a process.
 */
export const PLATFORM_CONFIG = [...configSchemasOf([...BUILT_SERVICES, healthService]), gatewayConfig] as const;

/** The whole platform's configuration, parsed: the shared variables and every service's own. */
export type PlatformConfig = ConfigOf<typeof PLATFORM_CONFIG>;

export interface PlatformOptions {
  /** Port to listen on; 0 picks a free one (tests). Default: PORT, else 3000. */
  port?: number;
  /**
   * Port of /metrics; 0 picks a free one. Default: a free one when `port` is given (a test or
   * an embedder choosing its ports must not contend for the fixed one), else MANAGEMENT_PORT
   * (a free one when PORT is 0).
   */
  managementPort?: number;
  /** Open dependencies to use instead of opening them from the configuration. */
  dependencies?: Dependencies<PlatformConfig>;
  /** Where the embedded database keeps its files (default `<DATA_DIR>/pglite`). */
  pgliteDir?: string;
  /** Replaces a service of the build by name (tests: sso with a captured admin announcement). */
  services?: Partial<Record<ServiceName, Service>>;
}

export interface Platform {
  /** The base URL it listens on. */
  url: string;
  /** The base URL of its management port (/metrics); absent with METRICS=off. */
  managementUrl?: string;
  app: App;
  dependencies: Dependencies<PlatformConfig>;
  /** Stops serving, then closes the dependencies it opened; `step` names each part (for a shutdown that times out). */
  close(step?: ShutdownStep): Promise<void>;
}

/** Every service of PLATFORM_SERVICES in ONE Fastify instance, plus health and the edge (docs). */
export async function buildPlatform(config: PlatformConfig, deps: Dependencies<PlatformConfig>, overrides: PlatformOptions['services'] = {}): Promise<App> {
  const built = new Map<ServiceName, Service>(BUILT_SERVICES.map((service) => [service.name, service]));
  const chosen = config.PLATFORM_SERVICES.flatMap((name) => overrides[name] ?? built.get(name) ?? []);
  return buildPlatformApp([...chosen, overrides.health ?? healthService], deps, {
    title: PLATFORM_TITLE,
    description: PLATFORM_DESCRIPTION,
    edge: (app) => registerDocs(app),
  });
}

/**
 * The all-in-one: one process, one Fastify instance, one public port (and the management
 * port of /metrics). All services share one set
 * of dependencies; one embedded database holds every schema.
 */
export async function startPlatform(config: PlatformConfig, logger: Logger, options: PlatformOptions = {}): Promise<Platform> {
  const settings: PlatformConfig = { ...config, ALL_IN_ONE: true };
  const deps = options.dependencies
    ? { ...options.dependencies, config: settings }
    : await openDependencies(settings, logger, { name: 'all-in-one', pgliteDir: options.pgliteDir });
  const release = async (step?: ShutdownStep) => {
    if (!options.dependencies) await closeDependencies(deps, step);
  };
  try {
    const app = await buildPlatform(settings, deps, options.services);
    const running = await listenApp('platform', app, { host: settings.HOST, port: options.port ?? settings.PORT ?? 3000 });
    const management = await openManagementPort(settings, logger, options.managementPort ?? (options.port === undefined ? undefined : 0)).catch(async (error: unknown) => {
      await running.close();
      throw error;
    });
    return {
      url: running.url,
      managementUrl: management?.url,
      app,
      dependencies: deps,
      close: async (step = untrackedStep) => {
        await closeListeners(step, running, management);
        await release(step);
      },
    };
  } catch (error) {
    await release();
    throw error;
  }
}
