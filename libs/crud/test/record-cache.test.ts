import { randomUUID } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { createMemoryCache, createRedisCache, type Cache } from '@app/platform';
import { REAL, silentLogger } from '@app/testing';
import { createRecordCache } from '../src/index.js';

const caches: [string, () => Promise<Cache>][] = [['memory', async () => createMemoryCache({ maxEntries: 100 })]];
if (REAL.redisUrl) {
  caches.push(['redis', () => createRedisCache({ url: REAL.redisUrl!, logger: silentLogger(), keyPrefix: `test:${randomUUID()}:` })]);
}

/** A load held until `release`, and a promise that it has started (so its stamp was read). */
function heldLoad<T>(value: T) {
  let release!: () => void;
  let started!: () => void;
  const loading = new Promise<void>((resolve) => (started = resolve));
  const load = () => new Promise<T>((resolve) => ((release = () => resolve(value)), started()));
  return { load, loading, release: () => release() };
}

describe.each(caches)('record cache over %s', (_kind, open) => {
  it('shares one database read among concurrent misses on one key', async () => {
    const cache = await open();
    const records = createRecordCache({ cache, domain: 'thing', ttlSeconds: 600, logger: silentLogger() });
    let reads = 0;
    const load = async () => {
      reads += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
      return '[{"id":"1"}]';
    };
    const answers = await Promise.all(Array.from({ length: 20 }, () => records.record('1', load)));
    expect(answers).toEqual(Array(20).fill('[{"id":"1"}]'));
    expect(reads).toBe(1);
    expect(await records.record('1', load)).toBe('[{"id":"1"}]');
    expect(reads).toBe(1);
    await cache.close();
  });

  it('does not store a read that began before an invalidation', async () => {
    const cache = await open();
    const records = createRecordCache({ cache, domain: 'thing', ttlSeconds: 600, logger: silentLogger() });
    const held = heldLoad('old');
    const slow = records.record('2', held.load);
    await held.loading;
    await records.invalidate('2');
    held.release();
    expect(await slow).toBe('old');
    expect(await records.record('2', async () => 'new')).toBe('new');
    await cache.close();
  });

  it('does not store a read that began before another replica invalidated the record', async () => {
    const cache = await open();
    // Two record caches on one cache: two replicas of the service.
    const [reader, writer] = [0, 1].map(() => createRecordCache({ cache, domain: 'thing', ttlSeconds: 600, logger: silentLogger() }));
    const held = heldLoad('old');
    const slow = reader!.record('3', held.load);
    await held.loading;
    // The writer committed the change, dropped the key and answered.
    await writer!.invalidate('3');
    held.release();
    expect(await slow).toBe('old');
    expect(await writer!.record('3', async () => 'new')).toBe('new');
    expect(await reader!.record('3', async () => 'newer')).toBe('new');
    await cache.close();
  });

  it('does not store a list page loaded before another replica\'s invalidation', async () => {
    const cache = await open();
    const [reader, writer] = [0, 1].map(() => createRecordCache({ cache, domain: 'thing', ttlSeconds: 600, logger: silentLogger() }));
    const held = heldLoad({ records: '[old]', returned: 1, hasMore: false });
    const slow = reader!.list('q', held.load);
    await held.loading;
    await writer!.invalidate('any');
    held.release();
    expect((await slow).records).toBe('[old]');
    expect((await reader!.list('q', async () => ({ records: '[new]', returned: 1, hasMore: false }))).records).toBe('[new]');
    await cache.close();
  });

  it('keys list pages by generation: an invalidation makes every page unreachable', async () => {
    const cache = await open();
    const records = createRecordCache({ cache, domain: 'thing', ttlSeconds: 600, logger: silentLogger() });
    const page = (body: string) => async () => ({ records: body, returned: 1, hasMore: true, total: 7 });
    expect(await records.list('q', page('[1]'))).toEqual({ records: '[1]', returned: 1, hasMore: true, total: 7 });
    expect((await records.list('q', page('[2]'))).records).toBe('[1]');
    await records.invalidate('any');
    expect((await records.list('q', page('[3]'))).records).toBe('[3]');
    await cache.close();
  });
});

describe('record cache turned off', () => {
  it('reads every time', async () => {
    const records = createRecordCache({ cache: createMemoryCache({ maxEntries: 10 }), domain: 'thing', ttlSeconds: 0, logger: silentLogger() });
    let reads = 0;
    const load = async () => String(++reads);
    await Promise.all([records.record('1', load), records.record('1', load)]);
    expect(await records.record('1', load)).toBe('3');
  });
});
