import { z } from 'zod';
import { defineInternalApi } from './internal-api.js';

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

export const identityLookupRequestSchema = z.union([
  z.strictObject({ email: z.string().max(320) }),
  z.strictObject({ id: z.uuid() }),
]);

/** An identity as another service sees it. */
export const internalIdentitySchema = z.object({
  id: z.uuid(),
  name: z.string(),
  email: z.string(),
  /** Its picture's URL (userinfo's `picture`); optional, so a peer of an older release still parses. */
  avatar: z.string().nullable().optional(),
  roles: z.array(z.string()),
  activated: z.boolean(),
});

/** The internal create (sso's bootstrap administrator, federated sign-up): the public shape, roles required. */
export const internalCreateIdentitySchema = z.strictObject({
  name: nameSchema,
  email: emailSchema,
  avatar: avatarSchema.optional(),
  roles: rolesSchema,
});

/** The public route identity reads on its own: by email, or by id. */
const IDENTITY_PATH = '/api/v1/identity';

/** identity's API for the platform's other services. */
export const identityApi = defineInternalApi('identity', {
  /** The identity by email (any case) or id; undefined when there is none. */
  lookup: {
    path: '/internal/v1/identities/lookup',
    summary: 'Find an identity by email or id (system tokens only)',
    input: identityLookupRequestSchema,
    output: internalIdentitySchema,
    absent: 404,
    // Read answers are arrays of one record (DESIGN.md); extra fields are ignored.
    onBehalf: {
      path: (query: IdentityLookupRequest) =>
        'email' in query ? `${IDENTITY_PATH}/email/${encodeURIComponent(query.email)}` : `${IDENTITY_PATH}/${encodeURIComponent(query.id)}`,
      output: z.array(internalIdentitySchema).length(1).transform((records) => records[0]!),
    },
  },
  /** Creates an identity with roles (roles are set by admins only on the public route); undefined when the email is taken. */
  create: {
    path: '/internal/v1/identities',
    summary: "Create an identity with roles: sso's bootstrap administrator (system tokens only)",
    input: internalCreateIdentitySchema,
    output: internalIdentitySchema,
    status: 201,
    absent: 422,
  },
});

export type IdentityLookupRequest = z.infer<typeof identityLookupRequestSchema>;
export type IdentityCreateRequest = z.infer<typeof internalCreateIdentitySchema>;
export type InternalIdentity = z.infer<typeof internalIdentitySchema>;
