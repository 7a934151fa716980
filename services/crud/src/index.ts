export { crudService, DOMAINS } from './service.js';
export { post } from './domains/post.js';
export { product } from './domains/product.js';
