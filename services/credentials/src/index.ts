export { credentialsService } from './service.js';
export { CREDENTIALS_PREFIX } from './credentials/routes.js';
