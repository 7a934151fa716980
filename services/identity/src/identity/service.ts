import type { IdentityEvent, InternalIdentity } from '@app/contracts';
import {
  bumpSignInGeneration,
  createOutageLog,
  entityTag,
  forbidden,
  isAdmin,
  isOwnerOrAdmin,
  isPrivileged,
  preconditionFailed,
  type Cache,
  type Logger,
  type Page,
  type Precondition,
  type Principal,
} from '@app/platform';
import { emailTaken, identityEmailNotFound, identityNotFound, lastActiveAdmin, privilegedFieldsForbidden } from './errors.js';
import { LastAdminViolation, PreconditionViolation, UniqueViolation, type IdentityRepository, type IdentityRow } from './repository.js';
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
export interface TaggedIdentity {
  record: IdentityRecord;
  etag: string;
}

const tagged = (record: IdentityRecord, json = JSON.stringify(record)): TaggedIdentity => ({ record, etag: entityTag(json) });

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
  /** Concurrent misses on one id share one database read. */
  const inFlight = new Map<string, Promise<TaggedIdentity | null>>();
  const cacheOutage = createOutageLog(logger, 'cache', {
    down: 'identity cache unavailable; reading the database until it answers again',
    up: 'identity cache answers again',
  });

  /**
   * The cache fails open: an unreachable cache costs a database read, never a request. A hit's
   * tag is hashed from the cached JSON itself, the string a miss stores.
   */
  const cached = async (id: string): Promise<TaggedIdentity | null> => {
    try {
      const hit = await cache.get(recordKey(id));
      cacheOutage.succeeded();
      if (hit) return tagged(JSON.parse(hit) as IdentityRecord, hit);
    } catch (error) {
      cacheOutage.failed(error);
    }
    let pending = inFlight.get(id);
    if (!pending) {
      pending = (async () => {
        const row = await repository.findById(id);
        if (!row) return null;
        const record = toRecord(row);
        const json = JSON.stringify(record);
        await cache.set(recordKey(id), json, RECORD_TTL_SECONDS).catch(() => undefined);
        return tagged(record, json);
      })().finally(() => inFlight.delete(id));
      inFlight.set(id, pending);
    }
    return pending;
  };

  const forget = (id: string) =>
    cache.delete(recordKey(id)).catch((error: unknown) => logger.warn({ err: error, id }, 'identity cache delete failed'));

  /** Inserts an identity as given, roles included: callers check who may set them. */
  const insert = async (input: CreateIdentityInput): Promise<TaggedIdentity> => {
    try {
      const row = await repository.create({ ...input, avatar: input.avatar ?? null }, (created) => ({
        subject: 'identity.created',
        payload: eventOf(created),
      }));
      deps.eventsCommitted();
      return tagged(toRecord(row));
    } catch (error) {
      if (error instanceof UniqueViolation) throw emailTaken(input.email);
      throw error;
    }
  };

  return {
    /**
     * Anyone may register; only an admin sets roles (a `system` token is an ordinary role and
     * may not: else any key of a service identity could mint admins).
     */
    async create(input: CreateIdentityInput, principal: Principal | undefined): Promise<TaggedIdentity> {
      if (input.roles !== undefined && !(principal && isAdmin(principal))) throw privilegedFieldsForbidden();
      return insert(input);
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
      return tagged(toRecord(row));
    },

    /** Admins and system tokens list everyone; anyone else lists only themselves. */
    async list(filters: IdentityFilters, page: Page, count: boolean, principal: Principal) {
      const scoped: IdentityFilters = isPrivileged(principal) ? filters : { ...filters, id: [{ operator: 'eq', value: principal.id, negated: false }] };
      const result = await repository.list(scoped, page, count);
      return { ...result, records: result.rows.map(toRecord) };
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
          precondition && ((current) => precondition(tagged(toRecord(current)).etag)),
        );
        if (!row) throw identityNotFound(id);
        deps.eventsCommitted();
        // Roles and activation are what sso's cached sign-in decisions hold: stale from here, in every replica.
        await Promise.all([forget(id), bumpSignInGeneration(cache, logger)]);
        return tagged(toRecord(row));
      } catch (error) {
        if (error instanceof UniqueViolation) throw emailTaken(input.email ?? '');
        if (error instanceof LastAdminViolation) throw lastActiveAdmin();
        if (error instanceof PreconditionViolation) throw preconditionFailed();
        throw error;
      }
    },

    /** For other services (system tokens): the identity by email or id, or null. */
    async lookup(by: { email: string } | { id: string }): Promise<InternalIdentity | null> {
      const row = 'email' in by ? await repository.findByEmail(by.email.toLowerCase()) : await repository.findById(by.id);
      return row ? { id: row.id, name: row.name, email: row.email, avatar: row.avatar ?? null, roles: row.roles, activated: row.activated } : null;
    },
  };
}
