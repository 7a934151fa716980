import { z } from 'zod';

/**
 * Domain events, by subject. Every payload names the aggregate and when the change
 * committed; none ever carries a secret, a hash, or a token.
 */
const occurredAt = z.iso.datetime();

export const identityEventSchema = z.object({
  identityId: z.uuid(),
  email: z.string(),
  name: z.string(),
  roles: z.array(z.string()),
  activated: z.boolean(),
  occurredAt,
});

export const CREDENTIAL_PROVIDERS = ['LOCAL', 'GOOGLE', 'GITHUB', 'API_KEY'] as const;
export type CredentialProvider = (typeof CREDENTIAL_PROVIDERS)[number];

export const credentialEventSchema = z.object({
  credentialId: z.uuid(),
  identityId: z.uuid(),
  provider: z.enum(CREDENTIAL_PROVIDERS),
  type: z.string(),
  activated: z.boolean(),
  /** True when the secret itself changed (a new password): refresh tokens must not outlive it. */
  secretChanged: z.boolean().optional(),
  occurredAt,
});

export const crudRecordEventSchema = z.object({
  domain: z.string(),
  id: z.uuid(),
  occurredAt,
});

export type IdentityEvent = z.infer<typeof identityEventSchema>;
export type CredentialEvent = z.infer<typeof credentialEventSchema>;
export type CrudRecordEvent = z.infer<typeof crudRecordEventSchema>;

/** Subject of a generic CRUD domain's event: `crud.product.created`. */
export const crudEventSubject = (domain: string, change: 'created' | 'updated' | 'deleted') => `crud.${domain}.${change}`;
