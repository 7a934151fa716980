import type { Logger } from '../logger.js';
import { createOutageLog } from '../outage-log.js';
import type { Cache } from './cache.js';

/**
 * Cache-aside reads that hold across processes (replicas), by construction rather than by
 * timing: every read takes the key's stamp with its value (one round trip), and a miss stores
 * what it loaded only while that stamp is unchanged (`Cache.writeIfStamped`). A writer deletes
 * the key after its change committed and before it answers, which takes the stamp. So a read
 * that loaded the old row before the commit, in any process, can no longer store it once the
 * writer has answered, and every read sent after the answer finds no value and loads the new
 * row. Stamps are random: a key deleted or expired and stamped again never repeats one.
 *
 * The cache fails open: when it cannot answer, reads go to the database (and store nothing),
 * and the outage is logged once, with its end. A delete that fails is queued, retried in the
 * background, and sent before this process serves anything from the cache again.
 */
export interface CacheAside {
  /** The value at `key`, from the cache or from `load` (stored when not null). */
  read(key: string, load: () => Promise<string | null>): Promise<string | null>;
  /**
   * The stamp of `key` (made when it has none), or undefined when the cache cannot answer.
   * Values keyed by a stamp, like list pages under a domain's generation, are unreachable
   * once `key` is invalidated: a new stamp is made.
   */
  stamp(key: string): Promise<string | undefined>;
  /** After a committed change and before answering it: drops the keys in every process. */
  invalidate(...keys: string[]): Promise<void>;
}

export interface CacheAsideOptions {
  cache: Cache;
  /** Seconds a value (and a stamp) lives. */
  ttlSeconds: number;
  logger: Logger;
  /** Names the cache user in the outage's log lines (a domain, `orders`). */
  name: string;
  onHit?: () => void;
  onMiss?: () => void;
}

/**
 * Deletes that failed while the cache was down, kept to be retried. Past this many distinct
 * keys the rest are not kept: such a key lives out its TTL (logged once).
 */
const MAX_PENDING_INVALIDATIONS = 10_000;
/** How often queued deletes are retried while the cache is down: it bounds how long another process can serve what they drop once the cache is back. */
const RETRY_INTERVAL_MS = 250;

export function createCacheAside(options: CacheAsideOptions): CacheAside {
  const { cache, ttlSeconds, logger, name } = options;
  const onHit = options.onHit ?? (() => undefined);
  const onMiss = options.onMiss ?? (() => undefined);

  const outage = createOutageLog(logger, 'cache', {
    down: 'cache unavailable: serving from the database until it answers again',
    up: 'cache answers again',
    fields: { cache: name },
  });

  /** Queued deletes: key -> when it was (last) queued; a new object each time. */
  const pending = new Map<string, { at: number }>();
  let overflowLogged = false;
  let flushing: Promise<boolean> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  const scheduleRetry = () => {
    if (retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void flush();
    }, RETRY_INTERVAL_MS);
    retryTimer.unref();
  };
  /**
   * Sends the queued deletes (one at a time for all callers); true once none is left. A delete
   * queued longer than the TTL is moot, the value it was for has expired: it is given up, so a
   * cache that never comes back (or was closed) is not retried for ever.
   */
  const flush = (): Promise<boolean> =>
    (flushing ??= (async () => {
      const expired = Date.now() - ttlSeconds * 1000;
      for (const [key, queued] of pending) if (queued.at < expired) pending.delete(key);
      const sent = [...pending];
      try {
        await cache.delete(...sent.map(([key]) => key));
        // A key queued again meanwhile stays: its delete may have been meant after this one.
        for (const [key, queued] of sent) if (pending.get(key) === queued) pending.delete(key);
        outage.succeeded();
      } catch (error) {
        outage.failed(error);
        scheduleRetry();
      } finally {
        flushing = undefined;
      }
      if (pending.size > 0) scheduleRetry();
      return pending.size === 0;
    })());
  const queue = (keys: readonly string[]) => {
    for (const key of keys) {
      if (pending.size < MAX_PENDING_INVALIDATIONS || pending.has(key)) pending.set(key, { at: Date.now() });
      else if (!overflowLogged) {
        overflowLogged = true;
        logger.warn({ cache: name }, 'too many invalidations queued while the cache is down; some values may be served stale until their TTL');
      }
    }
    scheduleRetry();
  };

  /**
   * Misses in flight, by key and stamp: a read joins a load only if it read the same stamp,
   * i.e. no invalidation came between the two reads, so the load is as fresh as its own.
   */
  const flights = new Map<string, Promise<string | null>>();
  const loadAndStore = (key: string, stamp: string, load: () => Promise<string | null>) => {
    const flightKey = `${stamp}\n${key}`;
    const current = flights.get(flightKey);
    if (current) return current;
    const flight = (async () => {
      const value = await load();
      if (value !== null) await cache.writeIfStamped(key, stamp, value, ttlSeconds).catch(outage.failed);
      return value;
    })().finally(() => flights.delete(flightKey));
    flights.set(flightKey, flight);
    return flight;
  };

  return {
    read: async (key, load) => {
      let entry: { value: string | null; stamp: string } | undefined;
      // The cache may be read once nothing is queued: a queued delete is sent first.
      if (pending.size === 0 || (await flush())) {
        try {
          entry = await cache.readStamped(key, ttlSeconds);
          outage.succeeded();
        } catch (error) {
          outage.failed(error);
        }
      }
      if (!entry) {
        onMiss();
        return load();
      }
      if (entry.value !== null) {
        onHit();
        return entry.value;
      }
      onMiss();
      return loadAndStore(key, entry.stamp, load);
    },

    stamp: async (key) => {
      try {
        if (pending.size > 0 && !(await flush())) return undefined;
        const { stamp } = await cache.readStamped(key, ttlSeconds);
        outage.succeeded();
        return stamp;
      } catch (error) {
        outage.failed(error);
        return undefined;
      }
    },

    invalidate: async (...keys) => {
      try {
        await cache.delete(...keys);
        outage.succeeded();
      } catch (error) {
        outage.failed(error);
        queue(keys);
      }
    },
  };
}
