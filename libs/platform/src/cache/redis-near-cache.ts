import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import type { Logger } from '../logger.js';

/** The channel Redis sends tracking invalidations to in RESP2 redirect mode. */
const INVALIDATE_CHANNEL = '__redis__:invalidate';

/**
 * A safety net, not the mechanism: an entry is dropped when Redis says its key changed (or
 * expired); this bounds how long one could outlive a change whose message was lost while
 * the connection still looked healthy.
 */
const MAX_AGE_MS = 60_000;

/**
 * Values longer than this stay in Redis only: the tier is for the small, hot values of
 * cache-aside reads (a record, a generation number, a page), and this bounds its memory to
 * about `maxEntries` x 64 KiB in the worst case.
 */
const MAX_VALUE_LENGTH = 64 * 1024;

export interface NearCache {
  /** GET through the local tier: a hit never leaves the process. */
  get(key: string): Promise<string | null>;
  /** Call before any command that writes `keys`: this process's next read sees the write. */
  forget(keys: readonly string[]): void;
  close(): Promise<void>;
}

export interface NearCacheOptions {
  /** The connection every command goes through; reads on it are tracked. */
  redis: Redis;
  /** `keyPrefix` of that connection: invalidation messages name keys with it. */
  keyPrefix: string;
  maxEntries: number;
  logger: Logger;
}

/**
 * A process-local tier in front of Redis that stays coherent across processes, with Redis's
 * server-assisted client-side caching (tracking, default mode, RESP2 redirect): the server
 * remembers which keys this process read and, when any client changes one (or it expires),
 * sends its name to this process's second connection, which drops the local copy.
 *
 * Why a changed value is never served after the change was acknowledged, on one host: Redis
 * queues the invalidation to this process in the same pass as its reply to the writer, and
 * loopback delivers it into this process's socket during that write. Whatever the writer then
 * answers reaches a client, and the client's next request reaches this process, only after
 * that, so the invalidation's socket is readable first, and Linux epoll reports ready sockets
 * in the order they became ready: the invalidation is handled (synchronously, in the socket's
 * data callback) before the request is read. Across hosts the request takes at least the
 * writer's, the edge's and the client's hops against one for the invalidation.
 *
 * The races it closes:
 * - a reply and an invalidation for the same key cross (they travel on two connections): a
 *   read records that it is in flight, an invalidation marks it, and a marked read's value
 *   is returned but not kept;
 * - a connection drops (invalidations may have been lost): the tier empties and serves
 *   nothing until both connections are back and tracking is on again;
 * - this process writes a key: `forget` drops it before the write is sent.
 */
export function createNearCache(options: NearCacheOptions): NearCache {
  const { redis, keyPrefix, logger } = options;
  const entries = new LRUCache<string, string>({ max: options.maxEntries, ttl: MAX_AGE_MS });
  /** Reads in flight by key; `stale` once the key changed while one was in flight. */
  const inFlight = new Map<string, { stale: boolean; count: number }>();
  /** True while tracking is on with a live redirect: only then is anything kept or served. */
  let tracking = false;
  /** Bumped whenever tracking starts or stops: a read from another epoch keeps nothing. */
  let epoch = 0;
  let closed = false;

  const drop = (key: string) => {
    entries.delete(key);
    const flight = inFlight.get(key);
    if (flight) flight.stale = true;
  };
  const dropAll = () => {
    entries.clear();
    for (const flight of inFlight.values()) flight.stale = true;
  };
  const stopTracking = () => {
    epoch += 1;
    tracking = false;
    dropAll();
  };

  // Its own connection, in RESP2: there the invalidations arrive as Pub/Sub messages, which
  // ioredis hands over (it drops RESP3's `invalidate` push frames), and a subscribed
  // connection runs nothing else. No automatic resubscription: each new connection first
  // asks its id (which it cannot once subscribed).
  const subscriber = redis.duplicate({ protocol: 2, autoResubscribe: false, keyPrefix: undefined });
  subscriber.on('error', () => undefined); // the main connection logs outages
  subscriber.on('messageBuffer', (channel: Buffer, message: Buffer[] | null) => {
    if (channel.toString() !== INVALIDATE_CHANNEL) return;
    // null: the server flushed its keys (FLUSHALL / FLUSHDB), or dropped tracking state.
    if (!Array.isArray(message)) return dropAll();
    for (const raw of message) {
      const key = raw.toString();
      if (key.startsWith(keyPrefix)) drop(key.slice(keyPrefix.length));
    }
  });

  /** The subscriber connection's client id, once it listens for invalidations. */
  let redirectId: number | undefined;
  let subscriberSetups = 0;

  const startTracking = async () => {
    stopTracking();
    const attempt = epoch;
    if (closed || redirectId === undefined || redis.status !== 'ready') return;
    try {
      await redis.client('TRACKING', 'OFF');
      await redis.client('TRACKING', 'ON', 'REDIRECT', String(redirectId));
      // Anything read before this reply was either untracked (and is not kept: other epoch)
      // or tracked: commands on one connection are answered in order.
      if (attempt === epoch) tracking = true;
    } catch (error) {
      if (attempt === epoch && !closed) logger.warn({ err: error }, 'redis client-side caching unavailable; every read goes to redis');
    }
  };
  const listen = async () => {
    const setup = ++subscriberSetups;
    redirectId = undefined;
    stopTracking();
    try {
      const id = (await subscriber.client('ID')) as number;
      await subscriber.subscribe(INVALIDATE_CHANNEL);
      if (setup !== subscriberSetups) return;
      redirectId = id;
      await startTracking();
    } catch (error) {
      if (setup === subscriberSetups && !closed) logger.warn({ err: error }, 'redis client-side caching unavailable; every read goes to redis');
    }
  };
  subscriber.on('ready', () => void listen());
  subscriber.on('close', () => {
    subscriberSetups += 1;
    redirectId = undefined;
    stopTracking();
  });
  redis.on('ready', () => void startTracking());
  redis.on('close', stopTracking);

  return {
    get: async (key) => {
      if (tracking) {
        const hit = entries.get(key);
        if (hit !== undefined) return hit;
      }
      const startedIn = epoch;
      let flight = inFlight.get(key);
      if (!flight) inFlight.set(key, (flight = { stale: false, count: 0 }));
      flight.count += 1;
      try {
        const value = await redis.get(key);
        if (tracking && epoch === startedIn && !flight.stale && value !== null && value.length <= MAX_VALUE_LENGTH) entries.set(key, value);
        return value;
      } finally {
        flight.count -= 1;
        if (flight.count === 0 && inFlight.get(key) === flight) inFlight.delete(key);
      }
    },
    forget: (keys) => {
      for (const key of keys) drop(key);
    },
    close: async () => {
      closed = true;
      stopTracking();
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}
