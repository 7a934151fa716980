import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { Cache } from './cache.js';

export interface RedisCacheOptions {
  url: string;
  logger: Logger;
  /** Prepended to every key, so several deployments (or test runs) can share one Redis. */
  keyPrefix?: string;
  /** A command not answered in this time fails, so a hung Redis never stalls a request. */
  commandTimeoutMs?: number;
}

const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return { count, redis.call('TTL', KEYS[1]) }`;

/** A sorted set scored by expiry: add (GT keeps the later expiry; Redis 6.2+), drop the expired, let the key live as long as its last member. */
const ADD_EXPIRING_SCRIPT = `
local now = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], 'GT', ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('EXPIREAT', KEYS[1], math.ceil(tonumber(last[2]))) end
return 1`;

/**
 * A stamped key is a hash: `v` the value (once written), `s` the stamp. Read both; give a key
 * without a stamp the fresh one the caller sent (ARGV[1]) for ARGV[2] seconds.
 */
const READ_STAMPED_SCRIPT = `
local got = redis.call('HMGET', KEYS[1], 'v', 's')
if got[2] then return got end
redis.call('HSET', KEYS[1], 's', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return { false, ARGV[1] }`;

/** Store the value ARGV[2] for ARGV[3] seconds only while the stamp is still ARGV[1]. */
const WRITE_IF_STAMPED_SCRIPT = `
if redis.call('HGET', KEYS[1], 's') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1`;

/** The scripts above as commands (EVALSHA, the script sent again only when Redis lost it). */
interface StampedCommands {
  readStamped(key: string, freshStamp: string, ttlSeconds: number): Promise<[string | null, string]>;
  writeIfStamped(key: string, stamp: string, value: string, ttlSeconds: number): Promise<number>;
}

/**
 * Redis through ioredis, tuned to fail fast: no offline queue (a command while disconnected
 * fails at once), one retry per command, a short command timeout, and reconnection with a
 * backoff capped at two seconds so the cache comes back by itself after an outage.
 */
export async function createRedisCache(options: RedisCacheOptions): Promise<Cache> {
  // Loaded on first use: the embedded default never pays for the driver.
  const { Redis } = await import('ioredis');
  const redis = new Redis(options.url, {
    keyPrefix: options.keyPrefix,
    connectTimeout: 2_000,
    commandTimeout: options.commandTimeoutMs ?? 500,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
  // Log an outage once, and its end, not every reconnection attempt.
  let down = false;
  redis.on('error', (error) => {
    if (!down) options.logger.warn({ err: error }, 'redis unavailable; the cache fails open until it is back');
    down = true;
  });
  redis.on('ready', () => {
    if (down) options.logger.info('redis connection restored');
    down = false;
  });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 2_000);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });

  let version: string | undefined;
  redis.on('close', () => {
    version = undefined;
  });

  redis.defineCommand('readStamped', { numberOfKeys: 1, lua: READ_STAMPED_SCRIPT });
  redis.defineCommand('writeIfStamped', { numberOfKeys: 1, lua: WRITE_IF_STAMPED_SCRIPT });
  const stamped = redis as unknown as StampedCommands;

  return {
    kind: 'redis',
    get: (key) => redis.get(key),
    getMany: (keys) => (keys.length > 0 ? redis.mget(...keys) : Promise.resolve([])),
    set: async (key, value, ttlSeconds) => {
      await redis.set(key, value, 'EX', ttlSeconds);
    },
    delete: async (...keys) => {
      if (keys.length > 0) await redis.del(...keys);
    },
    readStamped: async (key, ttlSeconds) => {
      // A stamped key is read with a plain HMGET, as cheap as a GET: the script (which makes
      // the stamp, atomically with the read) runs only for a key that has none yet.
      const [value = null, stamp] = await redis.hmget(key, 'v', 's');
      if (stamp) return { value, stamp };
      const [made, madeStamp] = await stamped.readStamped(key, randomUUID(), ttlSeconds);
      return { value: made, stamp: madeStamp };
    },
    writeIfStamped: async (key, stamp, value, ttlSeconds) => (await stamped.writeIfStamped(key, stamp, value, ttlSeconds)) === 1,
    increment: (key) => redis.incr(key),
    hit: async (key, windowSeconds) => {
      const [count, ttl] = (await redis.eval(HIT_SCRIPT, 1, key, windowSeconds)) as [number, number];
      return { count, resetSeconds: Math.max(1, ttl) };
    },
    addExpiring: async (key, member, expiresAt) => {
      await redis.eval(ADD_EXPIRING_SCRIPT, 1, key, expiresAt, member, Math.floor(Date.now() / 1000));
    },
    liveMembers: (key) => redis.zrangebyscore(key, `(${Math.floor(Date.now() / 1000)}`, '+inf'),
    ping: async () => {
      await redis.ping();
      if (version === undefined) {
        const info = await redis.info('server');
        version = /redis_version:([^\r\n]+)/.exec(info)?.[1] ?? 'unknown';
      }
      return { version };
    },
    close: async () => {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
