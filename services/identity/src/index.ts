export { identityService } from './service.js';
export { identityConfig, type IdentityConfig } from './config.js';
export { IDENTITY_PREFIX } from './identity/routes.js';
