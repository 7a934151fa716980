import { z } from 'zod';
import { defineInternalApi } from './internal-api.js';

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

export const localPasswordCreateRequestSchema = z.strictObject({ identityId: z.uuid(), password: z.string().min(8).max(1024) });

/**
 * The created LOCAL credential, as credentials' public API shows it (an array of one record):
 * callers need only its id, and the other fields pass through untouched.
 */
export const createdCredentialSchema = z.array(z.looseObject({ id: z.uuid() })).length(1);

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

/**
 * credentials' API for the platform's other services (sso's sign-ins). The verifications
 * answer 200 with `valid: false` for any mismatch, never saying which part was wrong.
 */
export const credentialsApi = defineInternalApi('credentials', {
  /**
   * Checks a LOCAL password in constant time whether or not the account exists. Given an
   * identity id it reads no identity: the caller has already read it.
   */
  verifyPassword: {
    path: '/internal/v1/credentials/verify-password',
    summary: 'Verify a LOCAL password for an email or identity (system tokens only)',
    input: verifyPasswordRequestSchema,
    output: verifyPasswordResponseSchema,
  },
  /** Resolves an API key to its identity and that identity's roles. */
  verifyApiKey: {
    path: '/internal/v1/credentials/verify-api-key',
    summary: 'Resolve an API key to its identity and roles (system tokens only)',
    input: verifyApiKeyRequestSchema,
    output: verifyApiKeyResponseSchema,
  },
  /** Gives an identity its LOCAL password (sso's bootstrap admin); undefined when it already has one (nothing changed). */
  createLocalPassword: {
    path: '/internal/v1/credentials/local-password',
    summary: "Give an identity its LOCAL password: sso's bootstrap admin (platform service tokens only)",
    input: localPasswordCreateRequestSchema,
    output: createdCredentialSchema,
    status: 201,
    absent: 422,
  },
  /** The GOOGLE or GITHUB credential holding this upstream subject; undefined when none does. */
  findFederated: {
    path: '/internal/v1/credentials/federated/lookup',
    summary: "Find the GOOGLE or GITHUB credential of an upstream subject: sso's federated sign-in (system tokens only)",
    input: federatedLookupRequestSchema,
    output: federatedCredentialSchema,
    absent: 404,
  },
  /**
   * Links an upstream subject to an identity (a new GOOGLE or GITHUB credential); undefined
   * when the subject is linked already (nothing changed).
   */
  createFederated: {
    path: '/internal/v1/credentials/federated',
    summary: "Link an upstream subject to an identity: sso's federated sign-up (system tokens only)",
    input: federatedCreateRequestSchema,
    output: federatedCredentialSchema,
    status: 201,
    absent: 422,
  },
});

export type FederatedProvider = z.infer<typeof federatedProviderSchema>;
export type FederatedLookupRequest = z.infer<typeof federatedLookupRequestSchema>;
export type FederatedCreateRequest = z.infer<typeof federatedCreateRequestSchema>;
export type FederatedCredential = z.infer<typeof federatedCredentialSchema>;
export type VerifyPasswordRequest = z.infer<typeof verifyPasswordRequestSchema>;
export type VerifyPasswordResponse = z.infer<typeof verifyPasswordResponseSchema>;
export type VerifyApiKeyResponse = z.infer<typeof verifyApiKeyResponseSchema>;
