import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { createCacheAside, createMemoryCache, createRedisCache, type Cache, type CacheAside } from '@app/platform';
import { describeIf, eventually, NEEDS_REAL_REDIS, REAL, silentLogger, startFaultProxy, type FaultProxy } from '@app/testing';

/** A load that answers only when released, and says when it started. */
function gatedLoad(value: string) {
  let release!: () => void;
  let started!: () => void;
  const startedPromise = new Promise<void>((resolve) => (started = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  let loads = 0;
  const load = async () => {
    loads++;
    started();
    await gate;
    return value;
  };
  return { load, release, started: startedPromise, loads: () => loads };
}

const caches: [string, () => Promise<Cache>][] = [['memory', async () => createMemoryCache({ maxEntries: 100 })]];
if (REAL.redisUrl) caches.push(['redis', () => createRedisCache({ url: REAL.redisUrl!, logger: silentLogger(), keyPrefix: `test:${randomUUID()}:` })]);

// Two cache-asides on one cache stand for two replicas of one service.
describe.each(caches)('cache-aside over %s, two processes', (_kind, open) => {
  const replicas = (cache: Cache) => [0, 1].map(() => createCacheAside({ cache, ttlSeconds: 60, logger: silentLogger(), name: 'test' })) as [CacheAside, CacheAside];

  it('does not store what a miss loaded before another process invalidated the key', async () => {
    const cache = await open();
    const [a, b] = replicas(cache);
    const old = gatedLoad('old');
    const racing = a.read('k', old.load);
    await old.started;
    // b's write has committed; b drops the key and answers.
    await b.invalidate('k');
    old.release();
    expect(await racing).toBe('old');
    // Every read sent after b's answer, in either process, loads the new state.
    expect(await a.read('k', async () => 'new')).toBe('new');
    expect(await b.read('k', async () => 'newer')).toBe('new');
    await cache.close();
  });

  it('shares one load among concurrent misses of one stamp, and starts another after an invalidation', async () => {
    const cache = await open();
    const [a, b] = replicas(cache);
    const first = gatedLoad('old');
    const early = Array.from({ length: 5 }, () => a.read('shared', first.load));
    await first.started;
    await b.invalidate('shared');
    // Sent after the invalidation: it must not join the load that began before it.
    const late = a.read('shared', async () => 'new');
    first.release();
    expect(await Promise.all(early)).toEqual(Array(5).fill('old'));
    expect(first.loads()).toBe(1);
    expect(await late).toBe('new');
    expect(await a.read('shared', async () => 'unused')).toBe('new');
    await cache.close();
  });

  it('makes values keyed by a stamp unreachable when the stamp\'s key is invalidated', async () => {
    const cache = await open();
    const [a, b] = replicas(cache);
    const generation = await a.stamp('generation');
    expect(generation).toBeDefined();
    expect(await b.stamp('generation')).toBe(generation);
    await b.invalidate('generation');
    expect(await a.stamp('generation')).not.toBe(generation);
    await cache.close();
  });

  it('stores nothing for a load that found no record', async () => {
    const cache = await open();
    const [a] = replicas(cache);
    expect(await a.read('none', async () => null)).toBeNull();
    expect(await a.read('none', async () => 'created')).toBe('created');
    await cache.close();
  });
});

describeIf(REAL.redisUrl, NEEDS_REAL_REDIS)('cache-aside while Redis cannot be reached', () => {
  const redisUrl = REAL.redisUrl ?? 'redis://127.0.0.1:6379';
  const target = { host: new URL(redisUrl).hostname, port: Number(new URL(redisUrl).port || 6379) };

  /**
   * A writer that reaches Redis through a proxy the test cuts, and another replica that reaches
   * it directly: the writer's invalidation is lost while the other still reads the old value.
   */
  const partitioned = async (run: (writer: CacheAside, other: CacheAside, otherCache: Cache, proxy: FaultProxy) => Promise<void>) => {
    const prefix = `test:${randomUUID()}:`;
    const proxy = await startFaultProxy(target);
    const writerCache = await createRedisCache({ url: proxy.url(redisUrl), logger: silentLogger(), keyPrefix: prefix });
    const otherCache = await createRedisCache({ url: redisUrl, logger: silentLogger(), keyPrefix: prefix });
    try {
      const aside = (cache: Cache) => createCacheAside({ cache, ttlSeconds: 60, logger: silentLogger(), name: 'test' });
      await run(aside(writerCache), aside(otherCache), otherCache, proxy);
    } finally {
      await Promise.all([writerCache.close(), otherCache.close()]);
      await proxy.close();
    }
  };

  it('reads the database, then sends the invalidation it could not before serving from the cache again', () =>
    partitioned(async (writer, other, otherCache, proxy) => {
      expect(await other.read('k', async () => 'v1')).toBe('v1');
      expect(await writer.read('k', async () => 'unused')).toBe('v1');
      proxy.cut();
      // The change committed; its invalidation cannot reach Redis: queued, the answer still given.
      await writer.invalidate('k');
      // Fail open: the writer reads the database, and stores nothing.
      expect(await writer.read('k', async () => 'v2')).toBe('v2');
      proxy.restore();
      // The queued invalidation goes first: the writer never answers v1 again...
      expect(await eventually(async () => (await writer.read('k', async () => 'v2')) === 'v2')).toBe(true);
      // ...and the other replica no longer finds v1 either.
      expect(await eventually(async () => (await otherCache.readStamped('k', 60)).value !== 'v1')).toBe(true);
      expect(await other.read('k', async () => 'v2')).toBe('v2');
    }));

  it('retries the queued invalidation in the background, with no read in the writer', () =>
    partitioned(async (writer, other, otherCache, proxy) => {
      expect(await other.read('k', async () => 'v1')).toBe('v1');
      proxy.cut();
      await writer.invalidate('k');
      proxy.restore();
      expect(await eventually(async () => (await otherCache.readStamped('k', 60)).value === null)).toBe(true);
      expect(await other.read('k', async () => 'v2')).toBe('v2');
    }));
});
