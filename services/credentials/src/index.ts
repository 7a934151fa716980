export { credentialsService } from './service.js';
export { credentialsConfig, type CredentialsConfig } from './config.js';
export { CREDENTIALS_PREFIX } from './credentials/routes.js';
