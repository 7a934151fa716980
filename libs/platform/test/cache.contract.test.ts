import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMemoryCache, createRedisCache, type Cache } from '@app/platform';
import { eventually, REAL, silentLogger, startFaultProxy } from '@app/testing';

/** The contract every cache adapter passes; the crud kit and sso rely on exactly this. */
function cacheContract(name: string, open: () => Promise<Cache>) {
  describe(`${name} cache`, () => {
    let cache: Cache;
    const key = (suffix: string) => `contract:${randomUUID()}:${suffix}`;
    beforeAll(async () => {
      cache = await open();
    });
    afterAll(async () => {
      await cache.close();
    });

    it('returns null for a key never set', async () => {
      expect(await cache.get(key('missing'))).toBeNull();
    });

    it('returns what was set, until it is deleted', async () => {
      const k = key('value');
      await cache.set(k, '{"a":1}', 60);
      expect(await cache.get(k)).toBe('{"a":1}');
      await cache.delete(k);
      expect(await cache.get(k)).toBeNull();
    });

    it('deletes several keys at once, and accepts none', async () => {
      const [a, b] = [key('a'), key('b')];
      await cache.set(a, '1', 60);
      await cache.set(b, '2', 60);
      await cache.delete(a, b);
      await cache.delete();
      expect([await cache.get(a), await cache.get(b)]).toEqual([null, null]);
    });

    it('expires a value after its TTL', async () => {
      const k = key('ttl');
      await cache.set(k, 'soon gone', 1);
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      expect(await cache.get(k)).toBeNull();
    });

    it('increments a counter atomically under concurrency', async () => {
      const k = key('counter');
      const values = await Promise.all(Array.from({ length: 20 }, () => cache.increment(k)));
      expect(values.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(await cache.get(k)).toBe('20');
    });

    it('counts hits in a window that resets', async () => {
      const k = key('window');
      const first = await cache.hit(k, 2);
      expect(first.count).toBe(1);
      expect(first.resetSeconds).toBe(2);
      expect((await cache.hit(k, 2)).count).toBe(2);
      await new Promise((resolve) => setTimeout(resolve, 2_300));
      expect((await cache.hit(k, 2)).count).toBe(1);
    });

    it('keeps an expiring set\'s members until each one\'s expiry, the later expiry winning', async () => {
      const k = key('set');
      const now = Math.floor(Date.now() / 1000);
      expect(await cache.liveMembers(k)).toEqual([]);
      await cache.addExpiring(k, 'long', now + 60);
      await cache.addExpiring(k, 'short', now + 1);
      await cache.addExpiring(k, 'renewed', now + 1);
      await cache.addExpiring(k, 'renewed', now + 60);
      await cache.addExpiring(k, 'renewed', now + 2);
      await cache.addExpiring(k, 'past', now - 1);
      expect((await cache.liveMembers(k)).sort()).toEqual(['long', 'renewed', 'short']);
      await new Promise((resolve) => setTimeout(resolve, 2_100));
      expect((await cache.liveMembers(k)).sort()).toEqual(['long', 'renewed']);
    });

    it('answers a ping with its version', async () => {
      const { version } = await cache.ping();
      expect(version).toMatch(name === 'memory' ? /^memory$/ : /^\d+\.\d+/);
    });
  });
}

cacheContract('memory', async () => createMemoryCache({ maxEntries: 1_000 }));

if (REAL.redisUrl) {
  const redisUrl = REAL.redisUrl;
  cacheContract('redis', () => createRedisCache({ url: redisUrl, logger: silentLogger(), keyPrefix: `test:${randomUUID()}:` }));
  cacheContract('redis with a local tier', () =>
    createRedisCache({ url: redisUrl, logger: silentLogger(), keyPrefix: `test:${randomUUID()}:`, localEntries: 100 }),
  );

  describe('redis cache, local tier (client-side caching)', () => {
    // Two caches on one prefix stand for two processes (replicas) of one platform.
    const prefix = `test:${randomUUID()}:`;
    const open = (url = redisUrl) => createRedisCache({ url, logger: silentLogger(), keyPrefix: prefix, localEntries: 100 });
    const opened: Cache[] = [];
    const twoProcesses = async () => {
      const pair = [await open(), await open()] as const;
      opened.push(...pair);
      return pair;
    };
    /** The GETs Redis receives for `key` (under the prefix) while `run` runs, seen through MONITOR. */
    const getsReaching = async (key: string, run: () => Promise<void>) => {
      // A raw MONITOR connection: each command the server runs comes back as one line.
      const monitor = connect(Number(new URL(redisUrl).port || 6379), new URL(redisUrl).hostname);
      let seen = '';
      monitor.on('data', (chunk: Buffer) => (seen += chunk.toString()));
      await new Promise((resolve) => monitor.once('connect', resolve));
      monitor.write('MONITOR\r\n');
      await new Promise<void>((resolve) => {
        const wait = () => (seen.startsWith('+OK') ? resolve() : setTimeout(wait, 5));
        wait();
      });
      try {
        await run();
        // MONITOR reports asynchronously: give the lines time to arrive.
        await new Promise((resolve) => setTimeout(resolve, 100));
      } finally {
        monitor.destroy();
      }
      return seen.split('\n').filter((line) => line.toLowerCase().includes(`"get" "${prefix}${key}"`)).length;
    };
    afterAll(async () => {
      await Promise.all(opened.map((cache) => cache.close()));
    });

    it('keeps what it read in the process: repeated reads reach Redis once', async () => {
      const [a, b] = await twoProcesses();
      await b.set('hot', 'v1', 60);
      // Tracking turns on once the second connection listens; until then every read goes to Redis.
      expect(await eventually(async () => (await getsReaching('hot', async () => void (await a.get('hot')))) === 0)).toBe(true);
      expect(await getsReaching('hot', async () => {
        for (let i = 0; i < 20; i++) expect(await a.get('hot')).toBe('v1');
      })).toBe(0);
    });

    it('drops its copy when another process changes, deletes or increments the key', async () => {
      const [a, b] = await twoProcesses();
      await b.set('shared', 'v1', 60);
      expect(await eventually(async () => (await getsReaching('shared', async () => void (await a.get('shared')))) === 0)).toBe(true);
      await b.set('shared', 'v2', 60);
      expect(await eventually(async () => (await a.get('shared')) === 'v2')).toBe(true);
      await b.delete('shared');
      expect(await eventually(async () => (await a.get('shared')) === null)).toBe(true);
      await b.set('counter', '1', 60);
      expect(await eventually(async () => (await getsReaching('counter', async () => void (await a.get('counter')))) === 0)).toBe(true);
      await b.increment('counter');
      expect(await eventually(async () => (await a.get('counter')) === '2')).toBe(true);
    });

    it('sees its own write at once, with no message in between', async () => {
      const [a] = await twoProcesses();
      await a.set('own', 'v1', 60);
      expect(await eventually(async () => (await getsReaching('own', async () => void (await a.get('own')))) === 0)).toBe(true);
      await a.set('own', 'v2', 60);
      expect(await a.get('own')).toBe('v2');
      await a.delete('own');
      expect(await a.get('own')).toBeNull();
    });

    it('serves nothing it kept once its connection dropped: a change made meanwhile is seen after it reconnects', async () => {
      const proxy = await startFaultProxy({ host: new URL(redisUrl).hostname, port: Number(new URL(redisUrl).port || 6379) });
      try {
        const a = await open(proxy.url(redisUrl));
        opened.push(a);
        const [b] = await twoProcesses();
        await b.set('outage', 'before', 60);
        expect(await eventually(async () => (await getsReaching('outage', async () => void (await a.get('outage')))) === 0)).toBe(true);
        proxy.cut();
        // Once `a` knows its connection is gone, it reads nothing (the tier included)...
        expect(await eventually(async () => a.get('outage').then(() => false, () => true))).toBe(true);
        // ...and a change's invalidation cannot reach it now: it is lost, not delayed.
        await b.set('outage', 'during', 60);
        proxy.restore();
        expect(await eventually(async () => (await a.get('outage').catch(() => null)) === 'during')).toBe(true);
      } finally {
        await proxy.close();
      }
    });
  });
}

describe('memory cache', () => {
  it('evicts the least recently used entry beyond its size', async () => {
    const cache = createMemoryCache({ maxEntries: 2 });
    await cache.set('a', '1', 60);
    await cache.set('b', '2', 60);
    await cache.get('a');
    await cache.set('c', '3', 60);
    expect([await cache.get('a'), await cache.get('b'), await cache.get('c')]).toEqual(['1', null, '3']);
  });
});
