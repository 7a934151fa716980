import { avatarSchema, emailSchema, internalIdentitySchema, nameSchema, rolesSchema } from '@app/contracts';
import { booleanFilterValue, filterParam, INPUT_EXAMPLES, instantFilterValue, listQuerySchema, type FilterCondition } from '@app/platform';
import { z } from 'zod';

export const identitySchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    email: z.string(),
    avatar: z.string().nullable(),
    roles: z.array(z.string()),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    activated: z.boolean(),
  })
  .meta({ id: 'Identity' });

export type IdentityRecord = z.infer<typeof identitySchema>;

/** Read answers are arrays of records (DESIGN.md), one element for a read by id. */
export const identityListSchema = z.array(identitySchema);

/**
 * Whole-body examples, so the docs UI pre-fills what anyone may send: built from the fields'
 * own examples it would add `roles` (and `activated`), and signing up or editing oneself with
 * those is a 403 for everyone but an admin.
 */
const SIGN_UP_EXAMPLE = { name: 'Ada Lovelace', email: 'ada@example.com' };

export const createIdentityBodySchema = z
  .strictObject({
    name: nameSchema,
    email: emailSchema,
    avatar: avatarSchema.optional(),
    roles: rolesSchema.optional().describe('Only an admin may set roles'),
  })
  .meta({ id: 'IdentityCreate', [INPUT_EXAMPLES]: [SIGN_UP_EXAMPLE] });

export const updateIdentityBodySchema = z.strictObject({
  name: nameSchema.optional(),
  email: emailSchema.optional(),
  avatar: avatarSchema.nullable().optional(),
  roles: rolesSchema.optional().describe('Only an admin may change roles'),
  activated: z.boolean().optional().describe('Only an admin may change this; the last active admin stays active'),
}).meta({ id: 'IdentityUpdate', [INPUT_EXAMPLES]: [{ name: 'Ada King' }] });

export type CreateIdentityInput = z.infer<typeof createIdentityBodySchema>;
export type UpdateIdentityInput = z.infer<typeof updateIdentityBodySchema>;

export const identityIdParamsSchema = z.object({ id: z.uuid() });
/** Exact match, any case; not validated as an email, so a malformed one is simply not found. */
export const identityEmailParamsSchema = z.object({ email: z.string().min(1).max(320).transform((email) => email.toLowerCase()) });

export const SORTABLE_FIELDS = ['createdAt', 'updatedAt', 'name', 'email', 'activated'] as const;

export const listIdentitiesQuerySchema = listQuerySchema(SORTABLE_FIELDS, {
  name: filterParam({ name: 'name', kind: 'text', value: z.string().max(200) }),
  email: filterParam({ name: 'email', kind: 'text', value: z.string().max(320).transform((email) => email.toLowerCase()) }),
  avatar: filterParam({ name: 'avatar', kind: 'text', value: z.string().max(2048) }),
  roles: filterParam({ name: 'roles (identities holding the role)', kind: 'member', value: z.string().max(64), example: 'admin' }),
  activated: filterParam({ name: 'activated', kind: 'boolean', value: booleanFilterValue }),
  createdAt: filterParam({ name: 'createdAt', kind: 'ordered', value: instantFilterValue }),
  updatedAt: filterParam({ name: 'updatedAt', kind: 'ordered', value: instantFilterValue }),
});

/** The conditions of each filtered field; `id` is set by the service to scope a non-privileged caller to its own record, never a query parameter. */
export type IdentityFilters = Partial<
  Record<'id' | 'name' | 'email' | 'avatar' | 'roles' | 'activated' | 'createdAt' | 'updatedAt', readonly FilterCondition[]>
>;

export { internalIdentitySchema };
