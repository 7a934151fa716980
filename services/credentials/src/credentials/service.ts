import {
  UpstreamError,
  type CallAuthority,
  type CredentialEvent,
  type CredentialProvider,
  type FederatedCreateRequest,
  type FederatedCredential,
  type FederatedLookupRequest,
  type IdentityClient,
  type IdentityLookupRequest,
  type InternalIdentity,
  type VerifyApiKeyResponse,
  type VerifyPasswordRequest,
  type VerifyPasswordResponse,
} from '@app/contracts';
import {
  AppError,
  forbidden,
  isAdmin,
  isOwnerOrAdmin,
  isPrivileged,
  recordAnswers,
  RequestValidationError,
  writeProblem,
  type CreateGuard,
  type CountPreference,
  type Page,
  type Precondition,
  type Principal,
  type TaggedRecord,
} from '@app/platform';
import {
  activationForbidden,
  credentialConflict,
  credentialNotFound,
  identityMissing,
  identityUnavailable,
  localExists,
  subjectTaken,
} from './errors.js';
import type { CredentialRepository, CredentialRow, CredentialWrite } from './repository.js';
import {
  ruleIssuesAsZod,
  TYPE_OF_PROVIDER,
  type CreateCredentialInput,
  type CredentialFilters,
  type CredentialRecord,
  type CredentialType,
  type UpdateCredentialInput,
} from './schemas.js';
import { legacyApiKeyMatches, legacyApiKeyPrefixOf, type ApiKeyHasher, type PasswordHasher } from './secrets.js';

export interface CredentialServiceDeps {
  repository: CredentialRepository;
  hasher: PasswordHasher;
  /** Keyed hashes of API keys (HMAC under the server key). */
  apiKeys: ApiKeyHasher;
  identities: IdentityClient;
  /** Called after a change (and its event) committed, so the outbox relays it at once. */
  eventsCommitted(): void;
  /**
   * Called after an update or revocation committed and before it is answered: sso's cached
   * API key verdicts stop being served (the shared sign-in generation), in every replica.
   */
  signInChanged(): Promise<void>;
}

/** The caller as this service sees it: who, and the authority to ask identity with on its behalf. */
export interface Caller {
  principal: Principal;
  authority: CallAuthority;
}

/** A record as the API shows it; the secret hash is dropped here and by every response schema. */
const toRecord = (row: CredentialRow): CredentialRecord => ({
  id: row.id,
  identity_id: row.identityId,
  provider: row.provider as CredentialProvider,
  type: row.type as CredentialType,
  subject: row.subject,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
  activated: row.activated,
  lastUsedAt: row.lastUsedAt?.toISOString() ?? null,
});

/** A record and its entity tag: the hash of its JSON (lastUsedAt included, so a use changes it). */
export type TaggedCredential = TaggedRecord<CredentialRecord>;

const credentials = recordAnswers(toRecord);

const eventOf = (row: CredentialRow, extra: { secretChanged?: boolean; occurredAt?: Date; actorSessionId?: string } = {}): CredentialEvent => ({
  credentialId: row.id,
  identityId: row.identityId,
  provider: row.provider as CredentialProvider,
  type: row.type,
  activated: row.activated,
  ...(extra.secretChanged !== undefined ? { secretChanged: extra.secretChanged } : {}),
  ...(extra.actorSessionId !== undefined ? { actorSessionId: extra.actorSessionId } : {}),
  occurredAt: (extra.occurredAt ?? row.updatedAt).toISOString(),
});

const conflictFor = (provider: string) =>
  provider === 'LOCAL' ? localExists() : provider === 'GOOGLE' || provider === 'GITHUB' ? subjectTaken(provider) : credentialConflict();

export type CredentialService = ReturnType<typeof createCredentialService>;

/**
 * A credential's lastUsedAt is written at most this often per process (ms): a busy API key
 * would otherwise cost a write per token. So lastUsedAt is precise to a minute per replica.
 */
export const LAST_USED_PRECISION_MS = 60_000;
/** Credentials whose last write is remembered at most (the oldest is forgotten first, which costs one write). */
const LAST_USED_ENTRIES = 10_000;

/**
 * Whether identity_id conditions ask for another identity's credentials by name (`eq` or
 * `in` with another id): for a non-privileged caller that is a 403, as it always was, rather
 * than an empty list.
 */
const namesOtherIdentity = (filters: CredentialFilters, own: string) =>
  (filters.identity_id ?? []).some(
    (condition) =>
      !condition.negated &&
      ((condition.operator === 'eq' && condition.value !== own) || (condition.operator === 'in' && condition.value.some((id) => id !== own))),
  );

export function createCredentialService(deps: CredentialServiceDeps) {
  const { repository, hasher, apiKeys } = deps;
  /** Credential id -> when this process last wrote its lastUsedAt (epoch ms). */
  const lastUseWritten = new Map<string, number>();

  /** Records a successful use: always with a rehash to store, else at most once per LAST_USED_PRECISION_MS. */
  const recordUse = async (id: string, rehash?: { secretHash: string } | { keyHash: string }) => {
    const now = Date.now();
    const written = lastUseWritten.get(id);
    if (!rehash && written !== undefined && now - written < LAST_USED_PRECISION_MS) return;
    lastUseWritten.delete(id);
    if (lastUseWritten.size >= LAST_USED_ENTRIES) lastUseWritten.delete(lastUseWritten.keys().next().value!);
    lastUseWritten.set(id, now);
    await repository.markUsed(id, rehash);
  };

  /** identity not answering says nothing about the request: 503, retry. */
  const lookupIdentity = async (query: IdentityLookupRequest, authority: CallAuthority): Promise<InternalIdentity | undefined> => {
    try {
      return await deps.identities.lookup(query, authority);
    } catch (error) {
      if (error instanceof UpstreamError) throw identityUnavailable();
      throw error;
    }
  };

  /** The credential, if the caller may see it: its owner, an admin or a system token. */
  const accessible = async (id: string, principal: Principal): Promise<CredentialRow> => {
    const row = await repository.findById(id);
    if (!row) throw credentialNotFound(id);
    if (!isOwnerOrAdmin(principal, row.identityId)) throw forbidden();
    return row;
  };

  /**
   * Hashes a new secret the way its provider stores it. An API key is stored under its keyed
   * hash only; a legacy key's prefix and unkeyed hash go with the old secret.
   */
  const secretFields = async (provider: string, secret: string | undefined): Promise<CredentialWrite> => {
    if (secret === undefined) return {};
    if (provider === 'LOCAL') return { secretHash: await hasher.hash(secret) };
    if (provider === 'API_KEY') return { keyHash: apiKeys.hash(secret), secretHash: null, keyPrefix: null };
    return {};
  };

  const service = {
    /**
     * Admins and system tokens only; the identity must exist (asked of identity with the
     * caller's token). `options.guard` runs in the insert's transaction (an Idempotency-Key).
     */
    async create(
      input: CreateCredentialInput,
      caller: Caller,
      options: { platform?: boolean; guard?: CreateGuard<TaggedCredential> } = {},
    ): Promise<TaggedCredential> {
      if (!isPrivileged(caller.principal)) throw forbidden();
      const identity = await lookupIdentity({ id: input.identity_id }, caller.authority);
      if (!identity) throw identityMissing(input.identity_id);
      // A credential is a way to act as its identity: whoever is not an admin may make one only
      // for an identity with no role the caller lacks, or `system` would be a step to `admin`.
      // The platform's own bootstrap (sso's first admin) is the one exception.
      if (!options.platform && !isAdmin(caller.principal) && identity.roles.some((role) => !caller.principal.roles.includes(role))) throw forbidden();
      const write = await secretFields(input.provider, input.secret);
      try {
        const row = await repository.create(
          {
            identityId: input.identity_id,
            provider: input.provider,
            type: input.type ?? TYPE_OF_PROVIDER[input.provider],
            subject: input.subject ?? null,
            activated: input.activated ?? true,
            ...write,
          },
          (created) => ({ subject: 'credential.created', payload: eventOf(created) }),
          credentials.guard(options.guard),
        );
        deps.eventsCommitted();
        return credentials.tagged(row);
      } catch (error) {
        throw writeProblem(error, () => conflictFor(input.provider));
      }
    },

    /**
     * What tells two creates apart for an Idempotency-Key: the body with its secret as its
     * keyed hash, so the kept fingerprint cannot test password guesses offline.
     */
    fingerprintOf(input: CreateCredentialInput): unknown {
      return input.secret === undefined ? input : { ...input, secret: apiKeys.hash(input.secret) };
    },

    async get(id: string, principal: Principal): Promise<TaggedCredential> {
      return credentials.tagged(await accessible(id, principal));
    },

    /** Admins and system tokens list every credential; an identity lists its own. */
    async list(filters: CredentialFilters, page: Page, count: CountPreference | undefined, principal: Principal) {
      if (!isPrivileged(principal) && namesOtherIdentity(filters, principal.id)) throw forbidden();
      // A caller's own conditions on identity_id still apply, ANDed with its own id.
      const own = { operator: 'eq', value: principal.id, negated: false } as const;
      const scoped: CredentialFilters = isPrivileged(principal) ? filters : { ...filters, identity_id: [...(filters.identity_id ?? []), own] };
      return credentials.page(await repository.list(scoped, page, count));
    },

    /**
     * The provider rules hold for the credential as it will be after the update. Its owner may
     * change the secret; only an admin changes `activated` (else a user could reactivate the
     * credential an admin deactivated). With a precondition (If-Match), only while the
     * credential still has that tag (412).
     */
    async update(id: string, input: UpdateCredentialInput, principal: Principal, precondition?: Precondition): Promise<TaggedCredential> {
      const existing = await accessible(id, principal);
      if (input.activated !== undefined && !isAdmin(principal)) throw activationForbidden();
      const provider = existing.provider as CredentialProvider;
      const issues = ruleIssuesAsZod({
        provider,
        type: input.type,
        secret: input.secret,
        hasSecret: input.secret !== undefined || existing.secretHash !== null || existing.keyHash !== null,
        hasSubject: input.subject !== undefined || existing.subject !== null,
      });
      if (issues.length > 0) {
        const error = new RequestValidationError(issues);
        error.validationContext = 'body';
        throw error;
      }
      const secretChanged = input.secret !== undefined;
      // The owner's own session survives its password change; every other one ends (sso).
      const actorSessionId = principal.id === existing.identityId ? principal.claims.sid : undefined;
      const write = await secretFields(provider, input.secret);
      try {
        const row = await repository.update(
          id,
          {
            ...(input.subject !== undefined ? { subject: input.subject } : {}),
            ...(input.activated !== undefined ? { activated: input.activated } : {}),
            ...write,
          },
          (updated) => ({ subject: 'credential.updated', payload: eventOf(updated, { secretChanged, actorSessionId }) }),
          credentials.onRow(precondition),
        );
        if (!row) throw credentialNotFound(id);
        deps.eventsCommitted();
        await deps.signInChanged();
        return credentials.tagged(row);
      } catch (error) {
        throw writeProblem(error, () => conflictFor(provider));
      }
    },

    /**
     * Revokes (deletes) the credential; `credential.revoked` tells sso to end its sessions.
     * With a precondition (If-Match), only while the credential still has that tag (412).
     */
    async revoke(id: string, principal: Principal, precondition?: Precondition): Promise<void> {
      await accessible(id, principal);
      let row: CredentialRow | null;
      try {
        row = await repository.delete(
          id,
          (deleted) => ({ subject: 'credential.revoked', payload: eventOf(deleted, { occurredAt: new Date() }) }),
          credentials.onRow(precondition),
        );
      } catch (error) {
        throw writeProblem(error);
      }
      if (!row) throw credentialNotFound(id);
      deps.eventsCommitted();
      await deps.signInChanged();
    },

    /** sso's federated sign-in: the credential linking this upstream account, if any. */
    async findFederated(request: FederatedLookupRequest): Promise<FederatedCredential | undefined> {
      const row = await repository.findBySubject(request.provider, request.subject);
      if (!row) return undefined;
      await recordUse(row.id);
      return { credentialId: row.id, identityId: row.identityId, activated: row.activated };
    },

    /**
     * sso's federated sign-up: links an upstream account to the identity just created for it.
     * Undefined when another sign-in linked the subject first (the unique index decides).
     */
    async createFederated(request: FederatedCreateRequest, caller: Caller): Promise<FederatedCredential | undefined> {
      try {
        const { record } = await service.create({ identity_id: request.identityId, provider: request.provider, subject: request.subject }, caller, { platform: true });
        return { credentialId: record.id, identityId: record.identity_id, activated: record.activated };
      } catch (error) {
        if (error instanceof AppError && error.code === 'CREDENTIALS_SUBJECT_TAKEN') return undefined;
        throw error;
      }
    },

    /**
     * Checks a LOCAL password. Every path that fails before the real comparison verifies a
     * dummy hash instead, so the answer takes as long whether or not the account exists.
     */
    async verifyPassword(request: VerifyPasswordRequest, authority: CallAuthority): Promise<VerifyPasswordResponse> {
      // By id, the caller has read the identity (and checks its activation): no second read here.
      const identity = 'email' in request ? await lookupIdentity({ email: request.email }, authority) : { id: request.identityId, activated: true };
      const credential = identity ? await repository.findLocal(identity.id) : null;
      if (!identity || !credential?.secretHash) {
        await hasher.verifyDummy(request.password);
        return { valid: false };
      }
      const matches = await hasher.verify(credential.secretHash, request.password);
      if (!matches || !credential.activated || !identity.activated) return { valid: false };
      // The costs in config rose since this hash was made: upgrade it while we hold the password.
      const rehashed = hasher.needsRehash(credential.secretHash) ? await hasher.hash(request.password) : undefined;
      await recordUse(credential.id, rehashed === undefined ? undefined : { secretHash: rehashed });
      return { valid: true, identityId: identity.id, credentialId: credential.id };
    },

    /**
     * Resolves an API key to its identity and roles: found by its keyed hash (unique index),
     * compared in constant time. A legacy key (`ak_<prefix>_…`, unkeyed SHA-256) is found by its
     * prefix instead and, on this first successful use, stored under the keyed hash.
     */
    async verifyApiKey(apiKey: string, authority: CallAuthority): Promise<VerifyApiKeyResponse> {
      const keyHash = apiKeys.hash(apiKey);
      let credential = await repository.findByKeyHash(keyHash);
      let matches = apiKeys.matches(apiKey, credential?.provider === 'API_KEY' ? credential.keyHash : undefined);
      let legacy = false;
      if (!credential) {
        const prefix = legacyApiKeyPrefixOf(apiKey);
        credential = prefix ? await repository.findByLegacyPrefix(prefix) : null;
        matches = legacyApiKeyMatches(apiKey, credential?.provider === 'API_KEY' ? credential.secretHash : undefined);
        legacy = matches;
      }
      if (!matches || !credential?.activated) return { valid: false };
      const identity = await lookupIdentity({ id: credential.identityId }, authority);
      if (!identity?.activated) return { valid: false };
      await recordUse(credential.id, legacy ? { keyHash } : undefined);
      return { valid: true, identityId: identity.id, credentialId: credential.id, roles: identity.roles };
    },
  };
  return service;
}
