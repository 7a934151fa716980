import type { Domain } from '@app/crud';
import { post } from './post.js';
import { product } from './product.js';

/** Every domain the crud service serves. Adding one: its definition file, a Prisma model, a migration. */
export const DOMAINS: readonly Domain[] = [product, post];

export { post, product };
