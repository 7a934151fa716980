export { crudService } from './service.js';
export { crudConfig, type CrudConfig } from './config.js';
export { DOMAINS, post, product } from './domains/index.js';
