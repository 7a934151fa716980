import type { Page } from '@app/platform';
import { createHash } from 'node:crypto';
import type { Domain } from './define-domain.js';
import { recordNotFound, uniqueConflict } from './errors.js';
import type { ListPage, RecordCache } from './record-cache.js';
import type { DomainRepository, RecordFilters, RecordValues } from './repository.js';

/**
 * The use cases of one generic domain. Reads answer serialized JSON arrays, so a cache hit is
 * sent as stored, with no parse and no re-serialization.
 */
export interface DomainService {
  /** `[record]`; 404 when no record has the id. */
  read(id: string): Promise<string>;
  list(page: Page, filters: RecordFilters, options: { count: boolean }): Promise<ListPage>;
  /** `[record]` as read back; 422 when a unique value is taken. */
  create(values: RecordValues): Promise<string>;
  /** `[record]` after the change; 404 unknown id, 422 unique value taken. */
  update(id: string, values: RecordValues): Promise<string>;
  /** 404 when no record has the id. */
  delete(id: string): Promise<void>;
}

export interface DomainServiceDependencies {
  repository: DomainRepository;
  cache: RecordCache;
  /** Called after every committed change, e.g. to wake the outbox relay. */
  onCommitted?: () => void;
}

/**
 * The same query always maps to the same cache key: fields sorted, the conditions of each
 * sorted (they are ANDed, so their order means nothing), defaults applied (so `?limit=20` and
 * no limit, `?price=10` and `?price=eq.10` share a page), hashed to bound the key's length.
 * Two different filter sets never share a key: the parsed conditions are all in it.
 */
export function normalizeQuery(page: Page, filters: RecordFilters, count: boolean): string {
  const entries = Object.keys(filters)
    .filter((key) => filters[key] !== undefined)
    .sort()
    .map((key) => [key, filters[key]!.map((condition) => JSON.stringify(condition)).sort()]);
  const paging = [page.limit, page.offset, page.sort.field, page.sort.direction];
  return createHash('sha256').update(JSON.stringify([paging, entries, count])).digest('base64url').slice(0, 32);
}

export function createDomainService(domain: Domain, deps: DomainServiceDependencies): DomainService {
  const { repository, cache } = deps;
  /** Runs after a commit: the cache must not answer the old state once the caller has its reply. */
  const committed = async (id: string) => {
    deps.onCommitted?.();
    await cache.invalidate(id);
  };
  return {
    read: async (id) => {
      const body = await cache.record(id, async () => {
        const record = await repository.findById(id);
        return record ? JSON.stringify([record]) : null;
      });
      if (body === null) throw recordNotFound(domain.name, id);
      return body;
    },

    list: (page, filters, options) =>
      cache.list(normalizeQuery(page, filters, options.count), async () => {
        const [found, total] = await Promise.all([repository.list(page, filters), options.count ? repository.count(filters) : undefined]);
        return { body: JSON.stringify(found.records), size: found.records.length, hasMore: found.hasMore, ...(total === undefined ? {} : { total }) };
      }),

    create: async (values) => {
      const record = await repository.create(values);
      if (!record) throw uniqueConflict(domain.name, domain.unique);
      await committed(String(record.id));
      return JSON.stringify([record]);
    },

    update: async (id, values) => {
      const result = await repository.update(id, values);
      if (result.status === 'not-found') throw recordNotFound(domain.name, id);
      if (result.status === 'conflict') throw uniqueConflict(domain.name, domain.unique);
      await committed(id);
      return JSON.stringify([result.record]);
    },

    delete: async (id) => {
      if (!(await repository.delete(id))) throw recordNotFound(domain.name, id);
      await committed(id);
    },
  };
}
