import { decimal, defineDomain } from '@app/crud';
import { z } from 'zod';

/** Products for sale: table "crud"."product", routes under /api/v1/products. */
export const product = defineDomain({
  name: 'product',
  columns: {
    name: z.string().min(1).max(50),
    price: decimal({ precision: 10, scale: 2 }).min(0),
    description: z.string().max(400).optional(),
    stock: z.number().int().min(0),
    category: z.enum(['Fruits', 'Vegetables', 'Meats', 'Hygiene']),
    perishable: z.boolean(),
  },
  unique: [],
  // The lists a storefront pages through: one category by price or newest first, at any depth.
  indexes: ['name', 'price', 'category', ['category', 'price'], ['category', 'createdAt']],
});
