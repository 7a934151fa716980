import { credentialsApi } from './credentials-api.js';
import { identityApi } from './identity-api.js';
import type { ClientOf } from './internal-api.js';
import type { ServiceName } from './registry.js';
import type { ServiceReadiness } from './services.js';

/**
 * Every service's internal API: its peers' typed clients (`ServiceClients`) are derived from
 * this list. A service that offers one appends its table here.
 */
export const INTERNAL_APIS = [identityApi, credentialsApi] as const;

export type IdentityClient = ClientOf<typeof identityApi>;
export type CredentialsClient = ClientOf<typeof credentialsApi>;

/** A service's own readiness, as the health report reads it. */
export interface ReadinessClient {
  readiness(service: ServiceName): Promise<ServiceReadiness>;
}

/** Every typed client a service can be given: one per internal API, by the name of the service that serves it. */
export type ServiceClients = ReadinessClient & { readonly [Api in (typeof INTERNAL_APIS)[number] as Api['service']]: ClientOf<Api> };
