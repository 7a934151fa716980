import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createMemoryCache, createRedisCache, type Cache } from '@app/platform';
import { REAL, silentLogger } from '@app/testing';

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

    it('reads several keys in one call, in order, null where none is set, and accepts none', async () => {
      const [a, missing, b] = [key('a'), key('missing'), key('b')];
      await cache.set(a, '1', 60);
      await cache.set(b, '2', 60);
      expect(await cache.getMany([a, missing, b])).toEqual(['1', null, '2']);
      expect(await cache.getMany([])).toEqual([]);
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

    it('gives a key without a stamp a fresh one, the same to every concurrent reader, until the key is deleted', async () => {
      const k = key('stamp');
      const reads = await Promise.all(Array.from({ length: 20 }, () => cache.readStamped(k, 60)));
      expect(new Set(reads.map((read) => read.stamp)).size).toBe(1);
      expect(reads.every((read) => read.value === null)).toBe(true);
      expect((await cache.readStamped(k, 60)).stamp).toBe(reads[0]!.stamp);
      await cache.delete(k);
      expect((await cache.readStamped(k, 60)).stamp).not.toBe(reads[0]!.stamp);
    });

    it('writes under a stamp only while it is current: a delete in between wins, and no later stamp repeats it', async () => {
      const k = key('cas');
      const { stamp } = await cache.readStamped(k, 60);
      expect(await cache.writeIfStamped(k, stamp, 'v1', 60)).toBe(true);
      expect(await cache.readStamped(k, 60)).toEqual({ value: 'v1', stamp });
      await cache.delete(k);
      const { stamp: next } = await cache.readStamped(k, 60);
      expect(await cache.writeIfStamped(k, stamp, 'old', 60)).toBe(false);
      expect(await cache.readStamped(k, 60)).toEqual({ value: null, stamp: next });
      expect(await cache.writeIfStamped(key('never-read'), stamp, 'old', 60)).toBe(false);
      expect((await cache.readStamped(key('never-read'), 60)).value).toBeNull();
    });

    it('expires a stamped value, and its stamp, after the TTL', async () => {
      const k = key('stamped-ttl');
      const { stamp } = await cache.readStamped(k, 60);
      await cache.writeIfStamped(k, stamp, 'soon gone', 1);
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      const after = await cache.readStamped(k, 60);
      expect(after.value).toBeNull();
      expect(after.stamp).not.toBe(stamp);
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
