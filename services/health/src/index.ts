export { healthService } from './service.js';
export { HEALTH_PREFIX } from './health/routes.js';
