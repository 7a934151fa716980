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
  /**
   * The sign-in (`sid`) of the caller who made the change, when it is the credential's own
   * identity: a password change ends every other session of the identity, not this one.
   */
  actorSessionId: z.string().min(1).optional(),
  occurredAt,
});

export const crudRecordEventSchema = z.object({
  domain: z.string(),
  id: z.uuid(),
  occurredAt,
});

/**
 * What sso revokes, recorded in sso's database in the transaction of the change that causes
 * it, then published on `revocation.<kind>` to every process (a broadcast). A verifier that
 * starts later, or whose bus was down, asks sso for the live ones (LIVE_REVOCATIONS_REQUEST):
 * - `session`: every token with this `sid`;
 * - `subject`: every token of this identity (`sub`) issued before `issuedBefore`;
 * - `client`: every token granted to this API_KEY credential (`client_id`) issued before `issuedBefore`.
 * `expiresAt` (epoch seconds) is when every token the entry can match has expired: the entry
 * is dropped then.
 */
export const REVOCATION_KINDS = ['session', 'subject', 'client'] as const;
export type RevocationKind = (typeof REVOCATION_KINDS)[number];

export const revocationEventSchema = z.object({
  kind: z.enum(REVOCATION_KINDS),
  id: z.string().min(1).max(200),
  /** Epoch seconds: tokens whose `iat` is earlier are revoked (`subject` and `client`). */
  issuedBefore: z.number().int().optional(),
  expiresAt: z.number().int(),
});

/** Bus subjects of revocations: `revocation.session`, `revocation.subject`, `revocation.client`. */
export const REVOCATION_SUBJECTS = 'revocation.>';
export const revocationSubject = (kind: RevocationKind) => `revocation.${kind}`;

/**
 * The bus request sso answers with its live (unexpired) revocations, a page at a time: each
 * verifier seeds its set with them at start and after its bus reconnects. Over the bus, not
 * HTTP: every verifier already trusts the bus with these very events, and holds no token of
 * its own to call sso with.
 */
export const LIVE_REVOCATIONS_REQUEST = 'sso.revocations.live';

/** A page's position: the last entry of the previous page (entries are ordered by kind, then id). */
const revocationCursorSchema = z.strictObject({ kind: z.enum(REVOCATION_KINDS), id: z.string().min(1).max(200) });

export const liveRevocationsRequestSchema = z.strictObject({ after: revocationCursorSchema.optional() });

export const liveRevocationsPageSchema = z.object({
  revocations: z.array(revocationEventSchema),
  /** Present when more follow: ask again with it as `after`. */
  next: revocationCursorSchema.optional(),
});

export type RevocationEvent = z.infer<typeof revocationEventSchema>;
export type LiveRevocationsRequest = z.infer<typeof liveRevocationsRequestSchema>;
export type LiveRevocationsPage = z.infer<typeof liveRevocationsPageSchema>;
export type IdentityEvent = z.infer<typeof identityEventSchema>;
export type CredentialEvent = z.infer<typeof credentialEventSchema>;
export type CrudRecordEvent = z.infer<typeof crudRecordEventSchema>;

/** Subject of a generic CRUD domain's event: `crud.product.created`. */
export const crudEventSubject = (domain: string, change: 'created' | 'updated' | 'deleted') => `crud.${domain}.${change}`;
