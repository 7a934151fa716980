import { z } from 'zod';
import { createCacheAside, defineCounter, type Cache, type Logger, type RecordPage } from '@app/platform';

/** One page of a list, as cached: the JSON array of its records, ready to send, and what the Link and Content-Range headers need. */
export type ListPage = RecordPage<string>;

/**
 * Cache-aside for one domain (see DESIGN "Cache"), on the platform's `createCacheAside`: a
 * read after an answered write sees it in every replica, also when reads raced the write. A
 * record lives under its own key; list pages live under a key per normalized query *and*
 * the stamp of the domain's generation key, so deleting that key makes every cached page
 * unreachable at once (old pages expire by TTL) instead of a SCAN. Concurrent misses on one
 * key share one database read. The cache fails open.
 */
export interface RecordCache {
  /** The record's JSON (an array of one), from the cache or `load`; null when there is no such record. */
  record(id: string, load: () => Promise<string | null>): Promise<string | null>;
  /** A list page for the normalized query, from the cache or `load`. */
  list(normalizedQuery: string, load: () => Promise<ListPage>): Promise<ListPage>;
  /** After a committed change, before it is answered: drops the record's key and every list page. */
  invalidate(id: string): Promise<void>;
}

export interface RecordCacheOptions {
  cache: Cache;
  domain: string;
  /** Seconds an entry lives; 0 turns caching (and the sharing of misses) off. */
  ttlSeconds: number;
  logger: Logger;
}

/** Reads by id and list pages answered from the cache (hit) or the database (miss, also while the cache is down). */
const cacheLookups = defineCounter({
  name: 'crud_cache_lookups_total',
  help: 'Cache-aside lookups of generic CRUD domains (records by id and list pages), by domain and result.',
  labelNames: ['domain', 'result'] as const,
});

export function createRecordCache(options: RecordCacheOptions): RecordCache {
  const { cache, domain, ttlSeconds, logger } = options;
  // Bound once per domain: counting a lookup builds no label object.
  const hit = cacheLookups.labels(domain, 'hit');
  const miss = cacheLookups.labels(domain, 'miss');
  const prefix = `crud:${domain}`;
  const recordKey = (id: string) => `${prefix}:record:${id}`;
  const generationKey = `${prefix}:generation`;

  if (ttlSeconds === 0) {
    return { record: (_id, load) => load(), list: (_query, load) => load(), invalidate: async () => undefined };
  }

  const aside = createCacheAside({ cache, ttlSeconds, logger, name: domain, onHit: () => hit.inc(), onMiss: () => miss.inc() });

  // A line of what the headers need (the last record's sort key may hold any character, so JSON), then the records' JSON as sent.
  const encodePage = (page: ListPage) => `${JSON.stringify([page.returned, page.hasMore, page.total ?? null, page.last ?? null])}\n${page.records}`;
  const pageHead = z.tuple([z.number(), z.boolean(), z.number().nullable(), z.object({ value: z.unknown(), id: z.string() }).nullable()]);
  const decodePage = (value: string): ListPage | null => {
    const newline = value.indexOf('\n');
    if (newline < 0) return null;
    let head: z.infer<typeof pageHead>;
    try {
      head = pageHead.parse(JSON.parse(value.slice(0, newline)));
    } catch {
      return null; // written by an older release: read the database
    }
    const [returned, hasMore, total, last] = head;
    return { records: value.slice(newline + 1), returned, hasMore, ...(total === null ? {} : { total }), ...(last === null ? {} : { last: { value: last.value, id: last.id } }) };
  };

  return {
    record: (id, load) => aside.read(recordKey(id), load),

    list: async (normalizedQuery, load) => {
      const generation = await aside.stamp(generationKey);
      // Without a readable generation a cached page could be stale: read the database.
      if (generation === undefined) {
        miss.inc();
        return load();
      }
      const value = await aside.read(`${prefix}:list:${generation}:${normalizedQuery}`, async () => encodePage(await load()));
      // `load` never answers null, and only what encodePage made is stored: always a page.
      return decodePage(value!) ?? load();
    },

    invalidate: (id) => aside.invalidate(generationKey, recordKey(id)),
  };
}
