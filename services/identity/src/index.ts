export { identityService } from './service.js';
export { IDENTITY_PREFIX } from './identity/routes.js';
