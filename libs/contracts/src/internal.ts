import { z } from 'zod';

/**
 * Service-to-service routes. They live under /internal (never routed by the gateway) and
 * accept only access tokens with role `system`.
 */
export const INTERNAL_ROUTES = {
  /** credentials: check a LOCAL password, in constant time whether or not the account exists. */
  verifyPassword: '/internal/v1/credentials/verify-password',
  /** credentials: resolve an API key to its identity. */
  verifyApiKey: '/internal/v1/credentials/verify-api-key',
  /** credentials: `POST { identityId, password }` -> 201, or 422 when it has one (sso's bootstrap admin). */
  localPasswordCreate: '/internal/v1/credentials/local-password',
  /** credentials: `POST { provider, subject }` -> the GOOGLE/GITHUB credential (200) or 404, for sso's federated sign-in. */
  federatedLookup: '/internal/v1/credentials/federated/lookup',
  /** credentials: `POST { identityId, provider, subject }` -> 201, or 422 when the subject is linked already (sso's federated sign-up). */
  federatedCreate: '/internal/v1/credentials/federated',
  /** identity: `POST { email }` or `{ id }` -> the identity (200) or 404, for sso's grants. */
  identityLookup: '/internal/v1/identities/lookup',
  /** identity: `POST { name, email, roles }` -> 201 the identity, or 422 when the email is taken (sso's bootstrap admin). */
  identityCreate: '/internal/v1/identities',
} as const;

export const verifyPasswordRequestSchema = z.union([
  z.strictObject({ email: z.string().max(320), password: z.string().max(1024) }),
  z.strictObject({ identityId: z.uuid(), password: z.string().max(1024) }),
]);

export const verifyPasswordResponseSchema = z.object({
  valid: z.boolean(),
  identityId: z.uuid().optional(),
  /** The LOCAL credential that matched: sso remembers it per sign-in, to end those sessions with it. */
  credentialId: z.uuid().optional(),
});

export const verifyApiKeyRequestSchema = z.strictObject({ apiKey: z.string().max(512) });

export const verifyApiKeyResponseSchema = z.object({
  valid: z.boolean(),
  identityId: z.uuid().optional(),
  credentialId: z.uuid().optional(),
  roles: z.array(z.string()).optional(),
});

/** The providers a person signs in through upstream: their credentials hold the account's subject. */
export const federatedProviderSchema = z.enum(['GOOGLE', 'GITHUB']);

/** An upstream account's subject (OIDC `sub`, GitHub's numeric user id), as the credential stores it. */
const federatedSubjectSchema = z.string().min(1).max(255);

export const federatedLookupRequestSchema = z.strictObject({ provider: federatedProviderSchema, subject: federatedSubjectSchema });

export const federatedCreateRequestSchema = z.strictObject({ identityId: z.uuid(), provider: federatedProviderSchema, subject: federatedSubjectSchema });

/** A GOOGLE or GITHUB credential as sso sees it: whose it is and whether it may still sign in. */
export const federatedCredentialSchema = z.object({
  credentialId: z.uuid(),
  identityId: z.uuid(),
  activated: z.boolean(),
});

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

export type FederatedProvider = z.infer<typeof federatedProviderSchema>;
export type FederatedLookupRequest = z.infer<typeof federatedLookupRequestSchema>;
export type FederatedCreateRequest = z.infer<typeof federatedCreateRequestSchema>;
export type FederatedCredential = z.infer<typeof federatedCredentialSchema>;
export type IdentityLookupRequest = z.infer<typeof identityLookupRequestSchema>;
export type VerifyPasswordRequest = z.infer<typeof verifyPasswordRequestSchema>;
export type VerifyPasswordResponse = z.infer<typeof verifyPasswordResponseSchema>;
export type VerifyApiKeyResponse = z.infer<typeof verifyApiKeyResponseSchema>;
export type InternalIdentity = z.infer<typeof internalIdentitySchema>;
