import { CREDENTIAL_PROVIDERS, type CredentialProvider } from '@app/contracts';
import { booleanFilterValue, filterParam, instantFilterValue, issueKey, listQuerySchema, type FilterCondition } from '@app/platform';
import { z } from 'zod';
import type { $ZodIssue } from 'zod/v4/core';
import { API_KEY_SECRET_MAX_LENGTH, API_KEY_SECRET_MIN_LENGTH, isRandomLookingSecret } from './secrets.js';

export const CREDENTIAL_TYPES = ['PASSWORD', 'OAUTH', 'API_KEY'] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

/**
 * The one type each provider's credentials have: a LOCAL secret is a password, GOOGLE and
 * GITHUB accounts are federated through OAuth (we keep their subject, never a token), and
 * an API key is its own kind. A request that omits `type` gets this one.
 */
export const TYPE_OF_PROVIDER: Record<CredentialProvider, CredentialType> = {
  LOCAL: 'PASSWORD',
  GOOGLE: 'OAUTH',
  GITHUB: 'OAUTH',
  API_KEY: 'API_KEY',
};

export const PASSWORD_MIN_LENGTH = 8;
/** argon2 hashes any length, but a megabyte "password" is a denial-of-service vector. */
export const PASSWORD_MAX_LENGTH = 1024;
export { API_KEY_SECRET_MAX_LENGTH, API_KEY_SECRET_MIN_LENGTH };

/** A credential as the API shows it: every field but the secret and its hash. */
export const credentialSchema = z
  .object({
    id: z.uuid(),
    identity_id: z.uuid(),
    provider: z.enum(CREDENTIAL_PROVIDERS),
    type: z.enum(CREDENTIAL_TYPES),
    subject: z.string().nullable(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    activated: z.boolean(),
    // Written at most once a minute per credential and replica (LAST_USED_PRECISION_MS).
    lastUsedAt: z.iso
      .datetime()
      .nullable()
      .describe('When the credential last signed someone in, precise to about a minute: repeated uses within a minute are not all recorded.'),
  })
  .meta({ id: 'Credential' });

export type CredentialRecord = z.infer<typeof credentialSchema>;

export const credentialListSchema = z.array(credentialSchema);

const secretField = z.string().min(1).max(PASSWORD_MAX_LENGTH).describe('Write-only: stored hashed, never returned');
const subjectField = z.string().trim().min(1).max(255).describe("The account id at GOOGLE or GITHUB (OIDC `sub`)");

/** What the provider rules look at: the credential's state after the write. */
export interface RuleInput {
  provider: CredentialProvider;
  type?: CredentialType;
  /** A secret sent in this request (its strength is checked). */
  secret?: string;
  hasSecret: boolean;
  hasSubject: boolean;
}

/**
 * The provider rules of create and update: LOCAL needs a secret and forbids a subject,
 * GOOGLE and GITHUB need a subject and forbid a secret, API_KEY needs a secret
 * the client chose (the key itself: 32 to 256 URL-safe characters of random data, never
 * generated here), and the type follows the provider. Each broken rule is one issue.
 */
export function providerRuleIssues(input: RuleInput): { path: string; key: string; values: Record<string, string | number> }[] {
  const { provider } = input;
  const issues: { path: string; key: string; values: Record<string, string | number> }[] = [];
  const rule = (path: string, key: string, values: Record<string, string | number> = {}) =>
    issues.push({ path, key: `credentials.rule.${key}`, values: { provider, ...values } });
  const expectedType = TYPE_OF_PROVIDER[provider];
  if (input.type !== undefined && input.type !== expectedType) rule('type', 'type', { type: expectedType });
  if (provider === 'LOCAL') {
    if (!input.hasSecret) rule('secret', 'secretRequired');
    if (input.hasSubject) rule('subject', 'subjectForbidden');
    if (input.secret !== undefined && input.secret.length < PASSWORD_MIN_LENGTH) {
      rule('secret', 'passwordLength', { min: PASSWORD_MIN_LENGTH, max: PASSWORD_MAX_LENGTH });
    }
  } else if (provider === 'GOOGLE' || provider === 'GITHUB') {
    if (!input.hasSubject) rule('subject', 'subjectRequired');
    if (input.hasSecret) rule('secret', 'secretForbidden');
  } else {
    // API_KEY: the secret is the key a client will present; the platform never invents one.
    if (!input.hasSecret) rule('secret', 'secretRequired');
    const secret = input.secret;
    if (secret !== undefined && (secret.length < API_KEY_SECRET_MIN_LENGTH || secret.length > API_KEY_SECRET_MAX_LENGTH)) {
      rule('secret', 'apiKeyLength', { min: API_KEY_SECRET_MIN_LENGTH, max: API_KEY_SECRET_MAX_LENGTH });
    } else if (secret !== undefined && !isRandomLookingSecret(secret)) {
      rule('secret', 'apiKeyRandom');
    }
  }
  return issues;
}

/** The same issues as zod issues, localized by the platform's error handler like any other 400. */
export function ruleIssuesAsZod(input: RuleInput): $ZodIssue[] {
  return providerRuleIssues(input).map((issue) => ({
    code: 'custom',
    path: [issue.path],
    message: issue.key,
    input: undefined,
    ...issueKey(issue.key, issue.values),
  }));
}

export const createCredentialBodySchema = z
  .strictObject({
    identity_id: z.uuid(),
    provider: z.enum(CREDENTIAL_PROVIDERS),
    type: z.enum(CREDENTIAL_TYPES).optional().describe('Follows from provider when omitted'),
    secret: secretField
      .optional()
      .describe('LOCAL: the password. API_KEY (required): the key itself, 32 to 256 URL-safe random characters, sent later as client_secret'),
    subject: subjectField.optional(),
    activated: z.boolean().optional(),
  })
  .superRefine((body, ctx) => {
    for (const issue of providerRuleIssues({
      provider: body.provider,
      type: body.type,
      secret: body.secret,
      hasSecret: body.secret !== undefined,
      hasSubject: body.subject !== undefined,
    })) {
      ctx.addIssue({ code: 'custom', path: [issue.path], message: issue.key, ...issueKey(issue.key, issue.values) });
    }
  })
  // One provider's fields only: the docs UI would otherwise pre-fill every field, which the rules refuse.
  .meta({ examples: [{ identity_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6', provider: 'LOCAL', secret: 'correct horse battery staple' }] });

export const updateCredentialBodySchema = z
  .strictObject({
    type: z.enum(CREDENTIAL_TYPES).optional(),
    secret: secretField.optional().describe('A new password (rehashed) or, for API_KEY, a new key (the same rules as on creation)'),
    subject: subjectField.optional(),
    activated: z.boolean().optional(),
  })
  .meta({ examples: [{ secret: 'a new, longer passphrase' }] });

export type CreateCredentialInput = z.infer<typeof createCredentialBodySchema>;
export type UpdateCredentialInput = z.infer<typeof updateCredentialBodySchema>;

export const credentialIdParamsSchema = z.object({ id: z.uuid() });

export const SORTABLE_FIELDS = ['createdAt', 'updatedAt', 'lastUsedAt', 'provider', 'type', 'activated'] as const;

export const listCredentialsQuerySchema = listQuerySchema(SORTABLE_FIELDS, {
  identity_id: filterParam({ name: 'identity_id', kind: 'exact', value: z.uuid() }),
  provider: filterParam({ name: 'provider', kind: 'exact', value: z.enum(CREDENTIAL_PROVIDERS), example: 'LOCAL,API_KEY' }),
  type: filterParam({ name: 'type', kind: 'exact', value: z.enum(CREDENTIAL_TYPES), example: 'PASSWORD,API_KEY' }),
  subject: filterParam({ name: 'subject', kind: 'text', value: z.string().max(255) }),
  activated: filterParam({ name: 'activated', kind: 'boolean', value: booleanFilterValue }),
  createdAt: filterParam({ name: 'createdAt', kind: 'ordered', value: instantFilterValue }),
  updatedAt: filterParam({ name: 'updatedAt', kind: 'ordered', value: instantFilterValue }),
  lastUsedAt: filterParam({ name: 'lastUsedAt', kind: 'ordered', value: instantFilterValue }),
});

/** The conditions of each filtered field. */
export type CredentialFilters = Partial<
  Record<'identity_id' | 'provider' | 'type' | 'subject' | 'activated' | 'createdAt' | 'updatedAt' | 'lastUsedAt', readonly FilterCondition[]>
>;
