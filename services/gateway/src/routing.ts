import { SERVICES, type ServiceName } from '@app/contracts';
import { replicaUrls, type SharedConfig } from '@app/platform';

/** One row of the gateway's routing table: requests under `prefix` go to one of `urls` (the service's replicas), path unchanged. */
export interface Route {
  service: ServiceName;
  prefix: string;
  urls: string[];
}

/** The routing table for a deployment: health, plus every service it runs, from the registry. */
export function routingTable(config: SharedConfig): Route[] {
  const services: ServiceName[] = ['health', ...config.PLATFORM_SERVICES.filter((name) => name !== 'health' && name !== 'gateway')];
  return services.flatMap((service) =>
    SERVICES[service].prefixes.map((prefix) => ({ service, prefix, urls: replicaUrls(config[SERVICES[service].urlVariable]) })),
  );
}
