export { crudService } from './service.js';
export { DOMAINS, post, product } from './domains/index.js';
