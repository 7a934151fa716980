export { createSsoService, ssoService, SSO_MIGRATIONS, type SsoOptions } from './service.js';
export { JWKS_PATH, JWKS_MAX_AGE_SECONDS } from './keys/routes.js';
export { DISCOVERY_PATH, OAUTH_METADATA_PATH } from './discovery/routes.js';
export { USERINFO_PATH } from './userinfo/routes.js';
export { TOKEN_PATH, REVOKE_PATH, INTROSPECT_PATH } from './tokens/routes.js';
export { DEV_ADMIN_EMAIL } from './bootstrap/admin.js';
export { configuredKeyService } from './keys/configured.js';
export { FIRST_PARTY_CLIENT_ID } from './clients/first-party.js';
