import { randomUUID } from 'node:crypto';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { holdRowLocks, itIf, ON_REAL_POSTGRES_ONLY, testModes } from '@app/testing';
import { aPost, aProduct, startCrud, type CrudHarness, type TestRequest, type Transport } from './helper.js';

/** What a strong entity tag of the kit looks like: 22 base64url characters, quoted, no W/. */
const STRONG_TAG = /^"[\w-]{22}"$/;

const cases = testModes().flatMap((mode) => (['inject', 'gateway'] as Transport[]).map((transport) => [mode, transport] as const));

describe.each(cases)('HTTP semantics of records (%s, through %s)', (mode, transport) => {
  let crud: CrudHarness;
  let auth: Record<string, string>;
  const send = (request: TestRequest) => crud.send({ ...request, headers: { ...auth, ...request.headers } });
  const sendRaw = (request: TestRequest) => crud.sendRaw({ ...request, headers: { ...auth, ...request.headers } });
  const createProduct = async (overrides: Record<string, unknown> = {}) => {
    const response = await send({ method: 'POST', url: '/api/v1/products', body: aProduct(overrides) });
    expect(response.status).toBe(201);
    return { record: (response.json as Record<string, unknown>[])[0]!, etag: response.headers.etag!, location: response.headers.location! };
  };
  const read = (id: unknown, headers: Record<string, string> = {}) => send({ method: 'GET', url: `/api/v1/products/${id}`, headers });

  beforeAll(async () => {
    crud = await startCrud(mode, transport);
    auth = { authorization: `Bearer ${crud.token}` };
  });
  afterAll(() => crud.close());

  describe('ETag', () => {
    it('answers a strong ETag on create and on every read, the same until the record changes', async () => {
      const { record, etag } = await createProduct();
      expect(etag).toMatch(STRONG_TAG);
      const first = await read(record.id);
      const second = await read(record.id);
      expect([first.headers.etag, second.headers.etag]).toEqual([etag, etag]);
    });

    it('answers a new ETag after an update, the one the next read answers', async () => {
      const { record, etag } = await createProduct();
      await read(record.id);
      const updated = await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, body: { stock: 7 } });
      expect(updated.status).toBe(200);
      expect(updated.headers.etag).toMatch(STRONG_TAG);
      expect(updated.headers.etag).not.toBe(etag);
      expect((await read(record.id)).headers.etag).toBe(updated.headers.etag);
    });

    it('gives two records with the same values different tags (the id is in the representation)', async () => {
      const [a, b] = await Promise.all([createProduct({ name: 'Twin' }), createProduct({ name: 'Twin' })]);
      expect(a.etag).not.toBe(b.etag);
    });
  });

  describe('If-None-Match on a read', () => {
    it('answers 304 with the ETag and no body when it names the current tag, or is *', async () => {
      const { record, etag } = await createProduct();
      for (const value of [etag, '*', `W/${etag}`, `"other", ${etag}`]) {
        const response = await sendRaw({ method: 'GET', url: `/api/v1/products/${record.id}`, headers: { 'if-none-match': value, 'accept-encoding': 'br, gzip' } });
        expect(response.status).toBe(304);
        expect(response.headers.etag).toBe(etag);
        expect(response.headers['content-encoding']).toBeUndefined();
        expect(response.body.length).toBe(0);
      }
    });

    it('answers 304 to HEAD too, and 200 with the body to a tag that is no longer current', async () => {
      const { record, etag } = await createProduct();
      expect((await sendRaw({ method: 'HEAD', url: `/api/v1/products/${record.id}`, headers: { 'if-none-match': etag } })).status).toBe(304);
      await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, body: { stock: 1 } });
      const response = await read(record.id, { 'if-none-match': etag });
      expect(response.status).toBe(200);
      expect((response.json as Record<string, unknown>[])[0]!.stock).toBe(1);
    });

    it('answers 304 from the cache without reading the database', async () => {
      const { record, etag } = await createProduct();
      await read(record.id);
      // Behind the service's back: a read that reached the database would see another record.
      await crud.deps.database.query('update "crud"."product" set "stock" = 999 where "id" = $1::uuid', [record.id]);
      const response = await read(record.id, { 'if-none-match': etag });
      expect(response.status).toBe(304);
      expect(response.headers.etag).toBe(etag);
    });

    it('answers 404 for an unknown id, whatever the tag', async () => {
      expect((await read(randomUUID(), { 'if-none-match': '*' })).status).toBe(404);
    });

    it('answers 400 problem+json to a malformed header', async () => {
      const { record } = await createProduct();
      const response = await read(record.id, { 'if-none-match': 'not-quoted' });
      expect(response.status).toBe(400);
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(response.json).toMatchObject({ code: 'PLATFORM_INVALID_ENTITY_TAG', detail: expect.stringContaining('If-None-Match') });
    });
  });

  describe('If-Match on a write', () => {
    it('answers 412 problem+json to a stale tag on PUT and changes nothing', async () => {
      const { record, etag } = await createProduct();
      const changed = await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, body: { stock: 2 } });
      const response = await send({
        method: 'PUT',
        url: `/api/v1/products/${record.id}`,
        headers: { 'if-match': etag, 'accept-language': 'de' },
        body: { stock: 3, name: 'Lost update' },
      });
      expect(response.status).toBe(412);
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(response.json).toMatchObject({
        status: 412,
        code: 'PLATFORM_PRECONDITION_FAILED',
        title: 'Vorbedingung fehlgeschlagen',
        detail: expect.stringContaining('If-Match'),
        instance: `/api/v1/products/${record.id}`,
      });
      const after = await read(record.id);
      expect(after.headers.etag).toBe(changed.headers.etag);
      expect((after.json as Record<string, unknown>[])[0]).toMatchObject({ stock: 2, name: record.name });
    });

    it('answers 412 to a stale tag on DELETE and keeps the record', async () => {
      const { record, etag } = await createProduct();
      await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, body: { stock: 4 } });
      const response = await send({ method: 'DELETE', url: `/api/v1/products/${record.id}`, headers: { 'if-match': etag } });
      expect(response.status).toBe(412);
      expect(response.json).toMatchObject({ code: 'PLATFORM_PRECONDITION_FAILED' });
      expect((await read(record.id)).status).toBe(200);
    });

    it('proceeds when it names the current tag or is *, and deletes with the current tag', async () => {
      const { record, etag } = await createProduct();
      const first = await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, headers: { 'if-match': etag }, body: { stock: 10 } });
      expect(first.status).toBe(200);
      const second = await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, headers: { 'if-match': '*' }, body: { stock: 11 } });
      expect(second.status).toBe(200);
      expect((second.json as Record<string, unknown>[])[0]!.stock).toBe(11);
      const removed = await send({ method: 'DELETE', url: `/api/v1/products/${record.id}`, headers: { 'if-match': `"stale", ${second.headers.etag}` } });
      expect(removed.status).toBe(204);
      expect((await read(record.id)).status).toBe(404);
    });

    it('compares strongly: a weak tag never satisfies If-Match', async () => {
      const { record, etag } = await createProduct();
      const response = await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, headers: { 'if-match': `W/${etag}` }, body: { stock: 1 } });
      expect(response.status).toBe(412);
      expect((await read(record.id)).headers.etag).toBe(etag);
    });

    it('answers 412 when If-None-Match names the current tag of a write', async () => {
      const { record, etag } = await createProduct();
      const response = await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, headers: { 'if-none-match': '*' }, body: { stock: 1 } });
      expect(response.status).toBe(412);
      expect((await read(record.id)).headers.etag).toBe(etag);
    });

    it('answers 404 for an unknown id, and 400 to a malformed header before any read', async () => {
      expect((await send({ method: 'PUT', url: `/api/v1/products/${randomUUID()}`, headers: { 'if-match': '*' }, body: { stock: 1 } })).status).toBe(404);
      const malformed = await send({ method: 'DELETE', url: `/api/v1/products/${randomUUID()}`, headers: { 'if-match': '"unterminated' } });
      expect(malformed.status).toBe(400);
      expect(malformed.json).toMatchObject({ code: 'PLATFORM_INVALID_ENTITY_TAG', detail: expect.stringContaining('If-Match') });
    });

    it('lets exactly one of concurrent writes with the same If-Match through; the others get 412', async () => {
      const { record, etag } = await createProduct();
      const stocks = [21, 22, 23, 24, 25];
      const responses = await Promise.all(
        stocks.map((stock) => send({ method: 'PUT', url: `/api/v1/products/${record.id}`, headers: { 'if-match': etag }, body: { stock } })),
      );
      const statuses = responses.map((response) => response.status).sort();
      expect(statuses).toEqual([200, 412, 412, 412, 412]);
      const winner = responses.find((response) => response.status === 200)!;
      const after = await read(record.id);
      expect(after.headers.etag).toBe(winner.headers.etag);
      expect(after.json).toEqual(winner.json);
    });

    // The embedded database runs one transaction at a time: there is no race to set up there.
    itIf(mode === 'real', ON_REAL_POSTGRES_ONLY)('lets exactly one through when the writes all wait on the row at once (real Postgres)', async () => {
      const { record, etag } = await createProduct();
      const lock = await holdRowLocks(crud.deps.config.DATABASE_URL!, 'select 1 from "crud"."product" where "id" = $1::uuid for update', [record.id]);
      const pending = [31, 32, 33, 34].map((stock) => send({ method: 'PUT', url: `/api/v1/products/${record.id}`, headers: { 'if-match': etag }, body: { stock } }));
      // Every write has reached the database and waits behind the test's lock.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await lock.release();
      const statuses = (await Promise.all(pending)).map((response) => response.status).sort();
      expect(statuses).toEqual([200, 412, 412, 412]);
    });

    it('lets exactly one of a concurrent update and delete with the same If-Match through', async () => {
      const { record, etag } = await createProduct();
      const [update, remove] = await Promise.all([
        send({ method: 'PUT', url: `/api/v1/products/${record.id}`, headers: { 'if-match': etag }, body: { stock: 1 } }),
        send({ method: 'DELETE', url: `/api/v1/products/${record.id}`, headers: { 'if-match': etag } }),
      ]);
      // The delete first: the update finds no record (404, as without a condition). The update
      // first: the delete finds another version (412), and the record stays, updated.
      const after = await read(record.id);
      if (remove.status === 204) {
        expect([update.status, after.status]).toEqual([404, 404]);
      } else {
        expect([update.status, remove.status]).toEqual([200, 412]);
        expect(after.headers.etag).toBe(update.headers.etag);
      }
    });
  });

  describe('Location', () => {
    it('answers the new record path on 201, where the same record and tag are read', async () => {
      const { record, etag, location } = await createProduct();
      expect(location).toBe(`/api/v1/products/${record.id}`);
      const response = await send({ method: 'GET', url: location });
      expect(response.json).toEqual([record]);
      expect(response.headers.etag).toBe(etag);
    });
  });

  describe('compression', () => {
    let bigPost: { id: string; json: unknown; etag: string };
    beforeAll(async () => {
      const response = await send({ method: 'POST', url: '/api/v1/posts', body: aPost({ content: 'Compressible words. '.repeat(200) }) });
      const [record] = response.json as { id: string }[];
      bigPost = { id: record!.id, json: response.json, etag: response.headers.etag! };
    });

    it.each([
      ['br', brotliDecompressSync],
      ['gzip', gunzipSync],
    ])('answers a body over 1 KB in %s when asked, decoding to the same JSON and tag', async (encoding, decode) => {
      const response = await sendRaw({ method: 'GET', url: `/api/v1/posts/${bigPost.id}`, headers: { 'accept-encoding': encoding } });
      expect(response.status).toBe(200);
      expect(response.headers['content-encoding']).toBe(encoding);
      expect(response.headers.vary?.toLowerCase()).toContain('accept-encoding');
      expect(response.headers.etag).toBe(bigPost.etag);
      expect(response.body.length).toBeLessThan(1024);
      expect(JSON.parse(decode(response.body).toString('utf8'))).toEqual(bigPost.json);
    });

    it('prefers br when both are accepted, and compresses a list page too', async () => {
      await Promise.all(Array.from({ length: 10 }, () => createProduct({ description: 'A product described at some length.' })));
      const plain = await sendRaw({ method: 'GET', url: '/api/v1/products?limit=10' });
      expect(plain.body.length).toBeGreaterThan(1024);
      const response = await sendRaw({ method: 'GET', url: '/api/v1/products?limit=10', headers: { 'accept-encoding': 'gzip, br' } });
      expect(response.headers['content-encoding']).toBe('br');
      expect(JSON.parse(brotliDecompressSync(response.body).toString('utf8'))).toEqual(JSON.parse(plain.body.toString('utf8')));
    });

    it('sends a body under 1 KB, or to a client that asks for none, uncompressed', async () => {
      const { record } = await createProduct();
      const small = await sendRaw({ method: 'GET', url: `/api/v1/products/${record.id}`, headers: { 'accept-encoding': 'br, gzip' } });
      expect(small.body.length).toBeLessThan(1024);
      expect(small.headers['content-encoding']).toBeUndefined();
      expect(JSON.parse(small.body.toString('utf8'))).toEqual([record]);
      const unasked = await sendRaw({ method: 'GET', url: `/api/v1/posts/${bigPost.id}` });
      expect(unasked.headers['content-encoding']).toBeUndefined();
      expect(JSON.parse(unasked.body.toString('utf8'))).toEqual(bigPost.json);
    });

    it('answers HEAD with the tag and the length of the uncompressed body, and no body', async () => {
      const response = await sendRaw({ method: 'HEAD', url: `/api/v1/posts/${bigPost.id}`, headers: { 'accept-encoding': 'gzip' } });
      expect(response.status).toBe(200);
      expect(response.headers['content-encoding']).toBeUndefined();
      expect(response.headers['content-length']).toBe(String(Buffer.byteLength(JSON.stringify(bigPost.json))));
      expect(response.headers.etag).toBe(bigPost.etag);
      expect(response.body.length).toBe(0);
    });
  });
});
