import { defineDomain } from '@app/crud';
import { z } from 'zod';

/** Blog posts: table "crud"."post", routes under /api/v1/posts. A slug names one post. */
export const post = defineDomain({
  name: 'post',
  columns: {
    title: z.string().min(5).max(255),
    content: z.string().min(10),
    authorId: z.string().min(1).max(36),
    slug: z.string().min(3).max(255).regex(/^[a-z0-9-]+$/),
  },
  unique: ['slug'],
  indexes: ['authorId'],
});
