import { credentialsService } from '@app/credentials';
import { crudService } from '@app/crud-service';
import { buildApp as buildGateway, routingTable } from '@app/gateway';
import { healthService } from '@app/health';
import { identityService } from '@app/identity';
import { ssoService } from '@app/sso';
import { createServer } from 'node:net';
import {
  closeDependencies,
  DEFAULT_PORTS,
  listenApp,
  openDependencies,
  startService,
  type Dependencies,
  type Logger,
  type PlatformConfig,
  type RunningService,
  type ServiceDefinition,
  type ServiceName,
} from '@app/platform';

/** The domain services this build can run, by name. */
const DOMAIN_DEFINITIONS: Partial<Record<ServiceName, ServiceDefinition>> = {
  identity: identityService,
  credentials: credentialsService,
  sso: ssoService,
  crud: crudService,
};

/** A port free right now on loopback (the OS picks it; the socket is closed before returning). */
async function reservePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

const URL_KEYS = {
  identity: 'IDENTITY_URL',
  credentials: 'CREDENTIALS_URL',
  sso: 'SSO_URL',
  crud: 'CRUD_URL',
  health: 'HEALTH_URL',
  gateway: 'GATEWAY_URL',
} as const satisfies Record<ServiceName, keyof PlatformConfig>;

export interface PlatformOptions {
  /** Port per service; 0 picks a free one (tests). Defaults to DEFAULT_PORTS, gateway to PORT. */
  ports?: Partial<Record<ServiceName, number>>;
  /** Open dependencies to use instead of opening them from the configuration. */
  dependencies?: Dependencies;
  /** Where the embedded database keeps its files (default `<DATA_DIR>/pglite`). */
  pgliteDir?: string;
}

export interface Platform {
  /** The gateway's base URL. */
  url: string;
  services: Partial<Record<ServiceName, RunningService>>;
  dependencies: Dependencies;
  close(): Promise<void>;
}

/**
 * Starts every service in one process, each on its own loopback port, and the gateway in
 * front of them: domain services first, then health (which reports on them), then the
 * gateway. All share one set of dependencies; one embedded database holds every schema.
 */
export async function startPlatform(config: PlatformConfig, logger: Logger, options: PlatformOptions = {}): Promise<Platform> {
  const deps = options.dependencies ?? (await openDependencies(config, logger, { name: 'all-in-one', pgliteDir: options.pgliteDir }));
  const portOf = (name: ServiceName) =>
    options.ports?.[name] ?? (name === 'gateway' ? (config.PORT ?? DEFAULT_PORTS.gateway) : DEFAULT_PORTS[name]);
  const started: RunningService[] = [];
  // Services that start before sso (identity, credentials) verify tokens against sso's JWKS,
  // which they fetch lazily on the first token: they need sso's final URL at build time. So
  // sso's port is fixed up front even when the caller asks for any free one.
  const ssoPort = portOf('sso') === 0 && config.PLATFORM_SERVICES.includes('sso') ? await reservePort() : portOf('sso');
  const listenPort = (name: ServiceName) => (name === 'sso' ? ssoPort : portOf(name));
  let current: PlatformConfig = {
    ...config,
    ALL_IN_ONE: true,
    ...(config.PLATFORM_SERVICES.includes('sso') ? { SSO_URL: `http://127.0.0.1:${ssoPort}` } : {}),
  };
  const close = async () => {
    for (const service of started.reverse()) await service.close().catch(() => undefined);
    if (!options.dependencies) await closeDependencies(deps);
  };
  try {
    const definitions = current.PLATFORM_SERVICES.flatMap((name) => DOMAIN_DEFINITIONS[name] ?? []);
    for (const definition of [...definitions, healthService]) {
      const service = await startService(definition, { ...deps, config: current }, { host: '127.0.0.1', port: listenPort(definition.name) });
      started.push(service);
      current = { ...current, [URL_KEYS[definition.name]]: service.url };
    }
    const gatewayApp = await buildGateway({ config: current, logger }, { routes: routingTable(current) });
    const gateway = await listenApp('gateway', gatewayApp, { host: current.HOST, port: portOf('gateway') });
    started.push(gateway);
    return {
      url: gateway.url,
      services: Object.fromEntries(started.map((service) => [service.name, service])),
      dependencies: deps,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
