import type { PlatformConfig, ServiceName } from '@app/platform';

/** One row of the gateway's routing table: requests under `prefix` go to `url`, path unchanged. */
export interface Route {
  service: ServiceName;
  prefix: string;
  url: string;
}

/** Public path prefixes each service owns. Internal routes live outside them and are never routed. */
export const SERVICE_PREFIXES: Partial<Record<ServiceName, string[]>> = {
  health: ['/api/v1/health'],
  identity: ['/api/v1/identity'],
  credentials: ['/api/v1/credentials'],
  sso: ['/api/v1/sso', '/.well-known/openid-configuration'],
  // Generic domains: whatever else is under /api/v1 (the other services' longer prefixes win),
  // so a new domain is served through the gateway without touching this table.
  crud: ['/api/v1'],
};

/** The routing table for a deployment: health, plus every service the configuration lists. */
export function routingTable(config: PlatformConfig): Route[] {
  const urls: Record<ServiceName, string> = {
    gateway: config.GATEWAY_URL,
    health: config.HEALTH_URL,
    identity: config.IDENTITY_URL,
    credentials: config.CREDENTIALS_URL,
    sso: config.SSO_URL,
    crud: config.CRUD_URL,
  };
  const services: ServiceName[] = ['health', ...config.PLATFORM_SERVICES.filter((name) => name !== 'health')];
  return services.flatMap((service) => (SERVICE_PREFIXES[service] ?? []).map((prefix) => ({ service, prefix, url: urls[service] })));
}
