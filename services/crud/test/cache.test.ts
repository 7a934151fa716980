import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createRedisCache } from '@app/platform';
import { silentLogger, startOwnRedis, testModes } from '@app/testing';
import { aProduct, startCrud, type CrudHarness, type TestRequest } from './helper.js';

/** Changes a row behind the service's back, so only a cached answer can still show the old value. */
const setStockDirectly = (crud: CrudHarness, id: unknown, stock: number) =>
  crud.deps.database.query('update "crud"."product" set "stock" = $1 where "id" = $2::uuid', [stock, id]);

describe.each(testModes())('cache (%s)', (mode) => {
  let crud: CrudHarness;
  const send = (request: TestRequest) => crud.send({ ...request, headers: { authorization: `Bearer ${crud.token}`, ...request.headers } });
  const create = async (overrides: Record<string, unknown> = {}) =>
    ((await send({ method: 'POST', url: '/api/v1/products', body: aProduct(overrides) })).json as Record<string, unknown>[])[0]!;
  const read = async (id: unknown) => (await send({ method: 'GET', url: `/api/v1/products/${id}` })).json as Record<string, unknown>[];

  beforeAll(async () => {
    crud = await startCrud(mode);
  });
  afterAll(() => crud.close());

  it('answers a read by id from the cache, under a key per record with a 600 s TTL', async () => {
    const record = await create();
    await read(record.id);
    await setStockDirectly(crud, record.id, 999);
    expect((await read(record.id))[0]!.stock).toBe(record.stock);
    expect((await crud.deps.cache.readStamped(`crud:product:record:${record.id}`, 600)).value).toBe(JSON.stringify([record]));
    expect(crud.deps.config.CACHE_TTL_SECONDS).toBe(600);
  });

  it('drops the record key on update: read, update, read again answers the new value', async () => {
    const record = await create();
    await read(record.id);
    await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, body: { stock: 5 } });
    expect((await read(record.id))[0]!.stock).toBe(5);
  });

  it('drops the record key on delete', async () => {
    const record = await create();
    await read(record.id);
    await send({ method: 'DELETE', url: `/api/v1/products/${record.id}` });
    expect((await send({ method: 'GET', url: `/api/v1/products/${record.id}` })).status).toBe(404);
  });

  it('caches list pages per query and renews the generation on create, update and delete', async () => {
    const name = `Cached-${Date.now()}`;
    const list = async () => (await send({ method: 'GET', url: `/api/v1/products?name=${name}&sort=createdAt` })).json as { id: string; stock: number }[];
    const first = await create({ name });
    expect((await list()).map((r) => r.id)).toEqual([first.id]);

    await setStockDirectly(crud, first.id, 777);
    expect((await list())[0]!.stock).toBe(first.stock); // served from the cache

    const generationStamp = async () => (await crud.deps.cache.readStamped('crud:product:generation', 600)).stamp;
    const generation = await generationStamp();
    const second = await create({ name });
    expect((await list()).map((r) => r.id)).toEqual([first.id, second.id]);
    expect((await list())[0]!.stock).toBe(777); // the new page was read from the database
    expect(await generationStamp()).not.toBe(generation);

    await send({ method: 'PUT', url: `/api/v1/products/${second.id}`, body: { stock: 3 } });
    expect((await list())[1]!.stock).toBe(3);

    await send({ method: 'DELETE', url: `/api/v1/products/${first.id}` });
    expect((await list()).map((r) => r.id)).toEqual([second.id]);
  });

  it('keeps a page with a count apart from the same page without one', async () => {
    const name = `Counted-${Date.now()}`;
    await create({ name });
    const url = `/api/v1/products?name=${name}`;
    expect((await send({ method: 'GET', url })).headers['content-range']).toBeUndefined();
    expect((await send({ method: 'GET', url, headers: { prefer: 'count=exact' } })).headers['content-range']).toBe('0-0/1');
    expect((await send({ method: 'GET', url })).headers['content-range']).toBeUndefined();
  });
});

describe.each(testModes())('cache turned off (%s)', (mode) => {
  let crud: CrudHarness;
  beforeAll(async () => {
    crud = await startCrud(mode, 'inject', { env: { CACHE_TTL_SECONDS: '0' } });
  });
  afterAll(() => crud.close());

  it('reads every answer from the database when CACHE_TTL_SECONDS is 0', async () => {
    const headers = { authorization: `Bearer ${crud.token}` };
    const created = await crud.send({ method: 'POST', url: '/api/v1/products', headers, body: aProduct() });
    const [record] = created.json as Record<string, unknown>[];
    await crud.send({ method: 'GET', url: `/api/v1/products/${record!.id}`, headers });
    await setStockDirectly(crud, record!.id, 4242);
    const read = await crud.send({ method: 'GET', url: `/api/v1/products/${record!.id}`, headers });
    expect((read.json as Record<string, unknown>[])[0]!.stock).toBe(4242);
    expect((await crud.deps.cache.readStamped(`crud:product:record:${record!.id}`, 600)).value).toBeNull();
  });
});

describe.each(testModes())('cache failing open with its own Redis killed (%s)', (mode) => {
  let redis: Awaited<ReturnType<typeof startOwnRedis>>;
  let crud: CrudHarness;
  const send = (request: TestRequest) => crud.send({ ...request, headers: { authorization: `Bearer ${crud.token}`, ...request.headers } });

  beforeAll(async () => {
    redis = await startOwnRedis();
    const cache = await createRedisCache({ url: redis.url, logger: silentLogger(), keyPrefix: 'fail-open:' });
    crud = await startCrud(mode, 'inject', { cache });
  });
  afterEach(() => redis.start().catch(() => undefined));
  afterAll(async () => {
    await crud.close();
    await redis.stop();
  });

  it('serves reads and writes from the database while Redis is down, and readiness says degraded', async () => {
    const created = await send({ method: 'POST', url: '/api/v1/products', body: aProduct() });
    const [record] = created.json as Record<string, unknown>[];
    expect((await send({ method: 'GET', url: `/api/v1/products/${record!.id}` })).status).toBe(200);

    await redis.stop();

    const read = await send({ method: 'GET', url: `/api/v1/products/${record!.id}` });
    expect(read.status).toBe(200);
    expect(read.json).toEqual([record]);
    const updated = await send({ method: 'PUT', url: `/api/v1/products/${record!.id}`, body: { stock: 11 } });
    expect(updated.status).toBe(200);
    expect(((await send({ method: 'GET', url: `/api/v1/products/${record!.id}` })).json as Record<string, unknown>[])[0]!.stock).toBe(11);
    const another = await send({ method: 'POST', url: '/api/v1/products', body: aProduct({ name: 'While down' }) });
    expect(another.status).toBe(201);
    const list = await send({ method: 'GET', url: '/api/v1/products?name=While%20down' });
    expect(list.status).toBe(200);
    expect(list.json).toEqual(another.json);
    expect((await send({ method: 'DELETE', url: `/api/v1/products/${record!.id}` })).status).toBe(204);

    const readiness = await crud.app.inject({ method: 'GET', url: '/health/readiness' });
    expect(readiness.statusCode).toBe(200);
    expect(readiness.json()).toMatchObject({ status: 'degraded', dependencies: { cache: { status: 'disconnected', latency: -1 }, database: { status: 'connected' } } });
  });
});
