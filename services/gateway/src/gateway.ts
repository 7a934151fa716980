import { buildEdgeApp, createLocalBus, type App, type Bus, type Logger } from '@app/platform';
import type { GatewayConfig } from './config.js';
import { gatewayEdge } from './service.js';

export interface GatewayOptions {
  /**
   * Where its verifier learns of revocations: the bus, over which it asks sso for the live
   * ones (seed) and hears sso's broadcast. Without it the gateway uses an in-process bus of
   * its own, where no sso answers nor publishes, closed with the app.
   */
  revocationBus?: Bus;
}

/** The gateway as an app, as `runEdge` builds it in its own process: for tests and embedders that listen themselves. */
export async function buildGateway(config: GatewayConfig, logger: Logger, options: GatewayOptions = {}): Promise<App> {
  const bus = options.revocationBus ?? createLocalBus({ logger });
  return buildEdgeApp(gatewayEdge, { config, logger, bus }, { release: options.revocationBus ? undefined : () => bus.close() });
}
