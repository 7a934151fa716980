import { defineCounter, type Cache, type Logger } from '@app/platform';

/** One page of a list, as cached: the JSON body and what the Link and Content-Range headers need. */
export interface ListPage {
  /** The JSON array of records, ready to send. */
  body: string;
  /** Records in `body`. */
  size: number;
  hasMore: boolean;
  /** Matching records in all, when the caller asked for an exact count. */
  total?: number;
}

/**
 * Cache-aside for one domain (see DESIGN "Cache"). A record lives under its own key; list
 * pages live under a key per normalized query *and* the domain's generation number, so a
 * change makes every cached page unreachable with one INCR (old pages expire by TTL) instead
 * of a SCAN. Concurrent misses on one key share one database read. The cache fails open:
 * when it cannot answer, reads and writes go to the database and the outage is logged once.
 */
export interface RecordCache {
  /** The record's JSON (an array of one), from the cache or `load`; null when there is no such record. */
  record(id: string, load: () => Promise<string | null>): Promise<string | null>;
  /** A list page for the normalized query, from the cache or `load`. */
  list(normalizedQuery: string, load: () => Promise<ListPage>): Promise<ListPage>;
  /** After a committed change: bumps the generation (drops every list page) and drops the record's key. */
  invalidate(id: string): Promise<void>;
}

export interface RecordCacheOptions {
  cache: Cache;
  domain: string;
  /** Seconds an entry lives; 0 turns caching (and the sharing of misses) off. */
  ttlSeconds: number;
  logger: Logger;
}

/**
 * Invalidations that failed while the cache was down, retried when it answers again. Past
 * this many distinct records only the generation bump is retried: a record key not dropped
 * then lives out its TTL.
 */
const MAX_PENDING_INVALIDATIONS = 10_000;

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

  let down = false;
  const pending = new Set<string>();
  let generationStale = false;
  let overflowLogged = false;

  const markDown = (error: unknown) => {
    if (down) return;
    down = true;
    logger.warn({ err: error, domain }, 'cache unavailable: serving from the database until it answers again');
  };
  const markUp = () => {
    if (!down) return;
    down = false;
    logger.info({ domain }, 'cache answers again');
    void retryInvalidations();
  };
  /** Runs a cache call; any failure counts as a miss (reads) or is queued (invalidations). */
  const failOpen = async <T>(operation: () => Promise<T>, fallback: T): Promise<T> => {
    try {
      const result = await operation();
      markUp();
      return result;
    } catch (error) {
      markDown(error);
      return fallback;
    }
  };

  const retryInvalidations = async () => {
    if (!generationStale && pending.size === 0) return;
    const ids = [...pending];
    pending.clear();
    generationStale = false;
    try {
      await cache.increment(generationKey);
      if (ids.length > 0) await cache.delete(...ids.map(recordKey));
    } catch (error) {
      generationStale = true;
      for (const id of ids) pending.add(id);
      markDown(error);
    }
  };

  // Misses in flight, by cache key. `version` counts local invalidations: a load that began
  // before one must not write what it read back into the cache.
  const flights = new Map<string, Promise<unknown>>();
  let version = 0;
  const shareMiss = <T>(key: string, load: () => Promise<T>, store: (value: T) => Promise<void>): Promise<T> => {
    const current = flights.get(key);
    if (current) return current as Promise<T>;
    const startedAt = version;
    const run = async () => {
      const value = await load();
      if (version === startedAt) await store(value);
      return value;
    };
    const flight = run().finally(() => {
      if (flights.get(key) === flight) flights.delete(key);
    });
    flights.set(key, flight);
    return flight;
  };

  const encodePage = (page: ListPage) => `${page.size}|${page.hasMore ? 1 : 0}|${page.total ?? ''}\n${page.body}`;
  const decodePage = (value: string): ListPage | null => {
    const newline = value.indexOf('\n');
    if (newline < 0) return null;
    const [size, more, total] = value.slice(0, newline).split('|');
    return { body: value.slice(newline + 1), size: Number(size), hasMore: more === '1', ...(total ? { total: Number(total) } : {}) };
  };

  return {
    record: async (id, load) => {
      const key = recordKey(id);
      const cached = await failOpen(() => cache.get(key), null);
      if (cached !== null) {
        hit.inc();
        return cached;
      }
      miss.inc();
      return shareMiss(key, load, async (value) => {
        if (value !== null) await failOpen(() => cache.set(key, value, ttlSeconds), undefined);
      });
    },

    list: async (normalizedQuery, load) => {
      const generation = await failOpen(() => cache.get(generationKey), null);
      // Without a readable generation a cached page could be stale: read the database.
      if (down) {
        miss.inc();
        return load();
      }
      const key = `${prefix}:list:${generation ?? '0'}:${normalizedQuery}`;
      const cached = await failOpen(() => cache.get(key), null);
      const page = cached === null ? null : decodePage(cached);
      if (page) {
        hit.inc();
        return page;
      }
      miss.inc();
      return shareMiss(key, load, async (value) => {
        await failOpen(() => cache.set(key, encodePage(value), ttlSeconds), undefined);
      });
    },

    invalidate: async (id) => {
      version += 1;
      flights.delete(recordKey(id));
      try {
        await Promise.all([cache.increment(generationKey), cache.delete(recordKey(id))]);
        markUp();
      } catch (error) {
        markDown(error);
        generationStale = true;
        if (pending.size < MAX_PENDING_INVALIDATIONS) pending.add(id);
        else if (!overflowLogged) {
          overflowLogged = true;
          logger.warn({ domain }, 'too many invalidations queued while the cache is down; some records may be served stale until their TTL');
        }
      }
    },
  };
}
