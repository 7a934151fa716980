/**
 * The one registry of the platform's services: their names, the port each listens on when
 * run alone, the variable that tells others where it is in split mode, and the public path
 * prefixes the gateway routes to it. The gateway, the all-in-one, the health report, the
 * typed clients and the deployment manifests all read it from here.
 */
export const SERVICES = {
  gateway: { port: 3000, urlVariable: 'GATEWAY_URL', prefixes: [] },
  identity: { port: 3001, urlVariable: 'IDENTITY_URL', prefixes: ['/api/v1/identity'] },
  credentials: { port: 3002, urlVariable: 'CREDENTIALS_URL', prefixes: ['/api/v1/credentials'] },
  sso: { port: 3003, urlVariable: 'SSO_URL', prefixes: ['/api/v1/sso', '/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'] },
  // Generic domains: whatever else is under /api/v1 (the other services' longer prefixes win),
  // so a new domain is served through the gateway without touching this table.
  crud: { port: 3004, urlVariable: 'CRUD_URL', prefixes: ['/api/v1'] },
  health: { port: 3005, urlVariable: 'HEALTH_URL', prefixes: ['/api/v1/health'] },
} as const satisfies Record<string, { port: number; urlVariable: `${Uppercase<string>}_URL`; prefixes: readonly string[] }>;

export type ServiceName = keyof typeof SERVICES;

/** The variable that tells where a service is (`IDENTITY_URL`, ...), one per service of the registry. */
export type ServiceUrlVariable = (typeof SERVICES)[ServiceName]['urlVariable'];

/**
 * The service that signs every access token, and the path of its public keys (JWKS) on it:
 * where every verifier of the platform fetches them, unless JWKS_URL says otherwise.
 */
export const TOKEN_ISSUER = { service: 'sso', jwksPath: '/api/v1/sso/jwks' } as const satisfies { service: ServiceName; jwksPath: string };

export const SERVICE_NAMES = Object.keys(SERVICES) as ServiceName[];

/**
 * The domain services behind the gateway, in start order. The gateway routes to them and the
 * health service reports on them; `PLATFORM_SERVICES` narrows the list for a deployment.
 */
export const DOMAIN_SERVICES: readonly ServiceName[] = ['identity', 'credentials', 'sso', 'crud'];
