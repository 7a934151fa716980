import { guardRows, onTaggedRow, tagJson, writeProblem, type CountPreference, type CreateGuard, type Page, type Precondition, type RecordAnswer } from '@app/platform';
import { createHash } from 'node:crypto';
import type { Domain } from './define-domain.js';
import { recordNotFound, uniqueConflict } from './errors.js';
import type { ListPage, RecordCache } from './record-cache.js';
import type { DomainRecord, DomainRepository, RecordFilters, RecordValues } from './repository.js';

/** A record's answer: its id, the JSON array of it, and its entity tag (the hash of exactly that JSON). */
export type TaggedRecord = RecordAnswer<string>;

/**
 * The use cases of one generic domain. Reads answer serialized JSON arrays, so a cache hit is
 * sent as stored, with no parse and no re-serialization; its tag is hashed from that string.
 * A write given a precondition (If-Match) checks it on the locked row: 412, nothing changed.
 */
export interface DomainService {
  /** `[record]`; 404 when no record has the id. */
  read(id: string): Promise<TaggedRecord>;
  list(page: Page, filters: RecordFilters, options: { count: CountPreference | undefined }): Promise<ListPage>;
  /** `[record]` as read back; 422 when a unique value is taken. `guard` runs in its transaction (an Idempotency-Key). */
  create(values: RecordValues, guard?: CreateGuard<TaggedRecord>): Promise<TaggedRecord>;
  /** `[record]` after the change; 404 unknown id, 412 precondition failed, 422 unique value taken. */
  update(id: string, values: RecordValues, precondition?: Precondition): Promise<TaggedRecord>;
  /** 404 when no record has the id, 412 when the precondition fails. */
  delete(id: string, precondition?: Precondition): Promise<void>;
}

const answerOf = (record: DomainRecord) => tagJson(String(record.id), JSON.stringify([record]));
/** The precondition on the record's tag, as the repository checks it on the locked row. */
const onRecord = (precondition: Precondition | undefined) => onTaggedRow(precondition, (record: DomainRecord) => answerOf(record).etag);

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
 * Two different filter sets never share a key: the parsed conditions are all in it, and so
 * is where the page starts (its offset, or the cursor's row) and how it pages.
 */
export function normalizeQuery(page: Page, filters: RecordFilters, count: CountPreference | undefined): string {
  const entries = Object.keys(filters)
    .filter((key) => filters[key] !== undefined)
    .sort()
    .map((key) => [key, filters[key]!.map((condition) => JSON.stringify(condition)).sort()]);
  const paging = [page.limit, page.offset, page.paging, page.after ?? null, page.sort.field, page.sort.direction];
  return createHash('sha256').update(JSON.stringify([paging, entries, count ?? false])).digest('base64url').slice(0, 32);
}

export function createDomainService(domain: Domain, deps: DomainServiceDependencies): DomainService {
  const { repository, cache } = deps;
  const conflict = () => uniqueConflict(domain.name, domain.unique);
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
      return tagJson(id, body);
    },

    list: (page, filters, options) =>
      cache.list(normalizeQuery(page, filters, options.count), async () => {
        const [found, total] = await Promise.all([repository.list(page, filters), options.count ? repository.count(filters, options.count) : undefined]);
        return {
          records: JSON.stringify(found.records),
          returned: found.records.length,
          hasMore: found.hasMore,
          ...(found.last ? { last: found.last } : {}),
          ...(total === undefined ? {} : { total }),
        };
      }),

    create: async (values, guard) => {
      const record = await repository.create(values, guardRows(guard, answerOf));
      if (!record) throw conflict();
      await committed(String(record.id));
      return answerOf(record);
    },

    update: async (id, values, precondition) => {
      const record = await repository.update(id, values, onRecord(precondition)).catch((error: unknown) => {
        throw writeProblem(error, conflict);
      });
      if (!record) throw recordNotFound(domain.name, id);
      await committed(id);
      return answerOf(record);
    },

    delete: async (id, precondition) => {
      const deleted = await repository.delete(id, onRecord(precondition)).catch((error: unknown) => {
        throw writeProblem(error);
      });
      if (!deleted) throw recordNotFound(domain.name, id);
      await committed(id);
    },
  };
}
