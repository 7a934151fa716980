import type { IdentityEvent, InternalIdentity } from '@app/contracts';
import {
  bumpSignInGeneration,
  createCacheAside,
  forbidden,
  isAdmin,
  isOwnerOrAdmin,
  isPrivileged,
  recordAnswers,
  tagRecord,
  writeProblem,
  type Cache,
  type CreateGuard,
  type Logger,
  type CountPreference,
  type Page,
  type Precondition,
  type Principal,
  type TaggedRecord,
} from '@app/platform';
import { emailTaken, identityEmailNotFound, identityNotFound, lastActiveAdmin, privilegedFieldsForbidden } from './errors.js';
import { LastAdminViolation, type IdentityRepository, type IdentityRow } from './repository.js';
import type { CreateIdentityInput, IdentityFilters, IdentityRecord, UpdateIdentityInput } from './schemas.js';

/** Read-by-id answers are cached this long; every update drops the key, so it bounds nothing but memory. */
export const RECORD_TTL_SECONDS = 600;
const recordKey = (id: string) => `identity:record:${id}`;

export interface IdentityServiceDeps {
  repository: IdentityRepository;
  cache: Cache;
  logger: Logger;
  /** Called after a change (and its event) committed, so the outbox relays it at once. */
  eventsCommitted(): void;
}

const toRecord = (row: IdentityRow): IdentityRecord => ({
  id: row.id,
  name: row.name,
  email: row.email,
  avatar: row.avatar,
  roles: row.roles,
  createdAt: row.createdAt.toISOString(),
  updatedAt: row.updatedAt.toISOString(),
  activated: row.activated,
});

/** A record and its entity tag: the hash of its JSON, as the cache stores it. */
export type TaggedIdentity = TaggedRecord<IdentityRecord>;

const identities = recordAnswers(toRecord);

const eventOf = (row: IdentityRow): IdentityEvent => ({
  identityId: row.id,
  email: row.email,
  name: row.name,
  roles: row.roles,
  activated: row.activated,
  occurredAt: row.updatedAt.toISOString(),
});

export type IdentityService = ReturnType<typeof createIdentityService>;

export function createIdentityService(deps: IdentityServiceDeps) {
  const { repository, cache, logger } = deps;
  /**
   * Read-your-writes in every replica, fail-open, concurrent misses sharing one database read:
   * see createCacheAside. A tag is hashed from the JSON itself, the string the cache holds.
   */
  const aside = createCacheAside({ cache, ttlSeconds: RECORD_TTL_SECONDS, logger, name: 'identity' });
  const cached = async (id: string): Promise<TaggedIdentity | null> => {
    const json = await aside.read(recordKey(id), async () => {
      const row = await repository.findById(id);
      return row ? JSON.stringify(toRecord(row)) : null;
    });
    return json === null ? null : tagRecord(JSON.parse(json) as IdentityRecord, json);
  };

  const forget = (id: string) => aside.invalidate(recordKey(id));

  /** Inserts an identity as given, roles included: callers check who may set them. */
  const insert = async (input: CreateIdentityInput, guard?: CreateGuard<TaggedIdentity>): Promise<TaggedIdentity> => {
    try {
      const row = await repository.create(
        { ...input, avatar: input.avatar ?? null },
        (created) => ({ subject: 'identity.created', payload: eventOf(created) }),
        identities.guard(guard),
      );
      deps.eventsCommitted();
      return identities.tagged(row);
    } catch (error) {
      throw writeProblem(error, () => emailTaken(input.email));
    }
  };

  return {
    /**
     * Anyone may register; only an admin sets roles (a `system` token is an ordinary role and
     * may not: else any key of a service identity could mint admins). `guard` runs in the
     * insert's transaction (an Idempotency-Key).
     */
    async create(input: CreateIdentityInput, principal: Principal | undefined, guard?: CreateGuard<TaggedIdentity>): Promise<TaggedIdentity> {
      if (input.roles !== undefined && !(principal && isAdmin(principal))) throw privilegedFieldsForbidden();
      return insert(input, guard);
    },

    /**
     * For the platform's own services only (in process, or the internal route for `system`
     * tokens, never routed by the gateway): sso's bootstrap administrator.
     */
    createWithRoles: async (input: CreateIdentityInput): Promise<IdentityRecord> => (await insert(input)).record,

    /** The identity itself, an admin or a system token; anyone else learns nothing (403 before any read). */
    async get(id: string, principal: Principal): Promise<TaggedIdentity> {
      if (!isOwnerOrAdmin(principal, id)) throw forbidden();
      const found = await cached(id);
      if (!found) throw identityNotFound(id);
      return found;
    },

    async getByEmail(email: string, principal: Principal): Promise<TaggedIdentity> {
      const row = await repository.findByEmail(email);
      // Whether someone else's email exists is not the caller's to learn: 403 either way.
      if (!isPrivileged(principal) && row?.id !== principal.id) throw forbidden();
      if (!row) throw identityEmailNotFound();
      return identities.tagged(row);
    },

    /** Admins and system tokens list everyone; anyone else lists only themselves. */
    async list(filters: IdentityFilters, page: Page, count: CountPreference | undefined, principal: Principal) {
      const scoped: IdentityFilters = isPrivileged(principal) ? filters : { ...filters, id: [{ operator: 'eq', value: principal.id, negated: false }] };
      return identities.page(await repository.list(scoped, page, count));
    },

    /**
     * The identity itself, an admin or a system token change name, email and avatar; only an
     * admin changes roles or activation, and never so that no active admin remains (409).
     * With a precondition (If-Match), only while the identity still has that tag (412).
     */
    async update(id: string, input: UpdateIdentityInput, principal: Principal, precondition?: Precondition): Promise<TaggedIdentity> {
      if (!isOwnerOrAdmin(principal, id)) throw forbidden();
      if ((input.roles !== undefined || input.activated !== undefined) && !isAdmin(principal)) throw privilegedFieldsForbidden();
      try {
        const row = await repository.update(
          id,
          input,
          (updated) => ({ subject: 'identity.updated', payload: eventOf(updated) }),
          identities.onRow(precondition),
        );
        if (!row) throw identityNotFound(id);
        deps.eventsCommitted();
        // Roles and activation are what sso's cached sign-in decisions hold: stale from here, in every replica.
        await Promise.all([forget(id), bumpSignInGeneration(cache, logger)]);
        return identities.tagged(row);
      } catch (error) {
        if (error instanceof LastAdminViolation) throw lastActiveAdmin();
        throw writeProblem(error, () => emailTaken(input.email ?? ''));
      }
    },

    /** For other services (system tokens): the identity by email or id, or null. */
    async lookup(by: { email: string } | { id: string }): Promise<InternalIdentity | null> {
      const row = 'email' in by ? await repository.findByEmail(by.email.toLowerCase()) : await repository.findById(by.id);
      return row ? { id: row.id, name: row.name, email: row.email, avatar: row.avatar ?? null, roles: row.roles, activated: row.activated } : null;
    },
  };
}
