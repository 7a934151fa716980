import { internalIdentitySchema } from '@app/contracts';
import { booleanFilterValue, filterParam, INPUT_EXAMPLES, instantFilterValue, listQuerySchema, type FilterCondition } from '@app/platform';
import { z } from 'zod';

/**
 * Emails are compared case-insensitively, as every identity provider does in practice: they
 * are lower-cased on the way in (bodies, paths, filters) and stored that way. The pattern is
 * the WHATWG one browsers use for <input type=email>: it accepts a domain without a dot, such
 * as the all-in-one mode's development admin, admin@localhost.
 */
export const emailSchema = z
  .email({ pattern: z.regexes.html5Email })
  .max(320)
  // Before the transform: zod keeps examples of what a request sends only there. Without one
  // the docs UI makes an address up from the pattern that no one would type.
  .meta({ examples: ['ada@example.com'] })
  .transform((email) => email.toLowerCase());

/** An avatar is a web image: http(s) only, so no `javascript:` or `data:` URL reaches a UI. */
export const avatarSchema = z.url({ protocol: /^https?$/, hostname: z.regexes.hostname }).max(2048);

export const nameSchema = z.string().trim().min(1).max(200);

/** Role names are short tokens (`admin`, `billing.read`), deduplicated. */
export const rolesSchema = z
  .array(z.string().regex(/^[a-z][a-z0-9_.:-]{0,63}$/))
  .max(32)
  .meta({ examples: [['billing.read']] })
  .transform((roles) => [...new Set(roles)]);

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

/** The internal create (sso's bootstrap administrator): the public shape, roles required. */
export const internalCreateIdentityBodySchema = createIdentityBodySchema.extend({ roles: rolesSchema });

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
