export { crudService, DOMAINS } from './service.js';
export { crudConfig, type CrudConfig } from './config.js';
export { post } from './domains/post.js';
export { product } from './domains/product.js';
