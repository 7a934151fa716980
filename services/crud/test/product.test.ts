import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { testModes } from '@app/testing';
import { aProduct, ISO, startCrud, UUID, type CrudHarness, type TestRequest, type Transport } from './helper.js';

const cases = testModes().flatMap((mode) => (['inject', 'gateway'] as Transport[]).map((transport) => [mode, transport] as const));

describe.each(cases)('products (%s, through %s)', (mode, transport) => {
  let crud: CrudHarness;
  let auth: Record<string, string>;
  const send = (request: TestRequest) => crud.send({ ...request, headers: { ...auth, ...request.headers } });
  const create = async (overrides: Record<string, unknown> = {}) => {
    const response = await send({ method: 'POST', url: '/api/v1/products', body: aProduct(overrides) });
    expect(response.status).toBe(201);
    return (response.json as Record<string, unknown>[])[0]!;
  };
  const errorsOf = (body: unknown) => (body as { errors: { path: string }[] }).errors.map((error) => error.path);

  beforeAll(async () => {
    crud = await startCrud(mode, transport);
    auth = { authorization: `Bearer ${crud.token}` };
  });
  afterAll(() => crud.close());

  describe('ping', () => {
    it('answers 200 with an empty body and needs no token', async () => {
      const response = await crud.send({ method: 'GET', url: '/api/v1/products/ping' });
      expect(response.status).toBe(200);
      expect(response.text).toBe('');
    });
  });

  describe('authentication', () => {
    const id = randomUUID();
    const routes: TestRequest[] = [
      { method: 'GET', url: `/api/v1/products/${id}` },
      { method: 'GET', url: '/api/v1/products' },
      { method: 'POST', url: '/api/v1/products', body: aProduct() },
      { method: 'PUT', url: `/api/v1/products/${id}`, body: { stock: 1 } },
      { method: 'DELETE', url: `/api/v1/products/${id}` },
    ];

    it.each(routes)('answers 401 to $method $url without a token', async (request) => {
      const response = await crud.send(request);
      expect(response.status).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="api-platform"');
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(response.json).toMatchObject({ status: 401, code: 'PLATFORM_AUTH_INVALID_TOKEN', title: 'Unauthorized' });
    });

    it('answers 401 before validating the input', async () => {
      const response = await crud.send({ method: 'POST', url: '/api/v1/products', body: { nonsense: true } });
      expect(response.status).toBe(401);
    });

    it('answers 401 to a token signed by an untrusted key, and to an expired one', async () => {
      const { startTokenIssuer } = await import('@app/testing');
      const stranger = await startTokenIssuer();
      try {
        const forged = await stranger.mint(randomUUID());
        const expired = await crud.issuer.mint(randomUUID(), [], {}, '2 hours ago');
        for (const token of [forged, expired, 'not-a-jwt']) {
          const response = await crud.send({ method: 'GET', url: '/api/v1/products', headers: { authorization: `Bearer ${token}` } });
          expect(response.status).toBe(401);
          expect(response.headers['www-authenticate']).toBe('Bearer realm="api-platform", error="invalid_token"');
        }
      } finally {
        await stranger.close();
      }
    });
  });

  describe('create', () => {
    it('answers 201 with the record as read by id, with the common fields set by the service', async () => {
      const response = await send({ method: 'POST', url: '/api/v1/products', body: aProduct() });
      expect(response.status).toBe(201);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      const [record] = response.json as Record<string, unknown>[];
      expect(record).toEqual({
        id: expect.stringMatching(UUID),
        ...aProduct(),
        activated: true,
        createdAt: expect.stringMatching(ISO),
        updatedAt: record!.createdAt,
      });
      const read = await send({ method: 'GET', url: `/api/v1/products/${record!.id}` });
      expect(read.json).toEqual([record]);
    });

    it('stores an omitted optional column as null, and honours activated: false', async () => {
      const body = aProduct({ activated: false });
      delete (body as Record<string, unknown>).description;
      const response = await send({ method: 'POST', url: '/api/v1/products', body });
      expect(response.status).toBe(201);
      expect((response.json as Record<string, unknown>[])[0]).toMatchObject({ description: null, activated: false });
    });

    it('accepts the largest price decimal(10,2) holds', async () => {
      expect((await create({ price: 99999999.99 })).price).toBe(99999999.99);
      expect((await create({ price: 0 })).price).toBe(0);
    });

    it.each([
      ['a price beyond decimal(10,2)', { price: 100000000 }, 'body.price'],
      ['a price with three decimals', { price: 1.005 }, 'body.price'],
      ['a negative price', { price: -1 }, 'body.price'],
      ['a price given as a string', { price: '1.99' }, 'body.price'],
      ['a stock beyond a Postgres integer', { stock: 2 ** 31 }, 'body.stock'],
      ['a fractional stock', { stock: 1.5 }, 'body.stock'],
      ['a negative stock', { stock: -1 }, 'body.stock'],
      ['an unknown category', { category: 'Toys' }, 'body.category'],
      ['an empty name', { name: '' }, 'body.name'],
      ['a name of 51 characters', { name: 'x'.repeat(51) }, 'body.name'],
      ['a description of 401 characters', { description: 'x'.repeat(401) }, 'body.description'],
      ['a NUL character in text', { name: 'a\u0000b' }, 'body.name'],
      ['a non-boolean perishable', { perishable: 'yes' }, 'body.perishable'],
    ])('answers 400 to %s, never a database error', async (_what, overrides, path) => {
      const response = await send({ method: 'POST', url: '/api/v1/products', body: aProduct(overrides) });
      expect(response.status).toBe(400);
      expect(response.json).toMatchObject({ status: 400, code: 'PLATFORM_VALIDATION_FAILED' });
      expect(errorsOf(response.json)).toEqual([path]);
    });

    it('answers 400 naming every missing required column', async () => {
      const response = await send({ method: 'POST', url: '/api/v1/products', body: {} });
      expect(response.status).toBe(400);
      expect(errorsOf(response.json).sort()).toEqual(['body.category', 'body.name', 'body.perishable', 'body.price', 'body.stock']);
    });

    it.each([['id', randomUUID()], ['createdAt', new Date().toISOString()], ['updatedAt', new Date().toISOString()], ['color', 'red']])(
      'answers 400 to a body carrying %s',
      async (field, value) => {
        const response = await send({ method: 'POST', url: '/api/v1/products', body: { ...aProduct(), [field]: value } });
        expect(response.status).toBe(400);
        expect(response.json).toMatchObject({ code: 'PLATFORM_VALIDATION_FAILED', errors: [{ path: 'body' }] });
      },
    );

    it('answers 400 to a body that is not JSON', async () => {
      const response = await send({ method: 'POST', url: '/api/v1/products', rawBody: '{"name":', headers: { 'content-type': 'application/json' } });
      expect(response.status).toBe(400);
      expect(response.json).toMatchObject({ code: 'PLATFORM_INVALID_JSON' });
    });
  });

  describe('read by id', () => {
    it('answers an array holding the record', async () => {
      const record = await create();
      const response = await send({ method: 'GET', url: `/api/v1/products/${record.id}` });
      expect(response.status).toBe(200);
      expect(response.json).toEqual([record]);
    });

    it('answers 404 to an unknown id', async () => {
      const id = randomUUID();
      const response = await send({ method: 'GET', url: `/api/v1/products/${id}` });
      expect(response.status).toBe(404);
      expect(response.json).toEqual({
        type: 'urn:problem:crud-not-found',
        title: 'Not Found',
        status: 404,
        detail: `No product has the id ${id}.`,
        instance: `/api/v1/products/${id}`,
        code: 'CRUD_NOT_FOUND',
        requestId: expect.any(String),
      });
    });

    it('answers 400 to an id that is not a UUID', async () => {
      const response = await send({ method: 'GET', url: '/api/v1/products/42' });
      expect(response.status).toBe(400);
      expect(errorsOf(response.json)).toEqual(['params.id']);
    });

    it('words problems in the caller language: en and pt-BR differ', async () => {
      const url = `/api/v1/products/${randomUUID()}`;
      const en = await send({ method: 'GET', url, headers: { 'accept-language': 'en' } });
      const pt = await send({ method: 'GET', url, headers: { 'accept-language': 'pt-BR' } });
      expect((pt.json as { detail: string }).detail).toMatch(/^Nenhum registro de product tem o id /);
      expect((pt.json as { title: string }).title).toBe('Não encontrado');
      expect((pt.json as { detail: string }).detail).not.toBe((en.json as { detail: string }).detail);
      expect(pt.headers['content-language']).toBe('pt-BR');

      const invalid = { method: 'POST', url: '/api/v1/products', body: aProduct({ price: -1 }) } as const;
      const enInvalid = await send({ ...invalid, headers: { 'accept-language': 'en' } });
      const ptInvalid = await send({ ...invalid, headers: { 'accept-language': 'pt-BR' } });
      const message = (body: unknown) => (body as { errors: { message: string }[] }).errors[0]!.message;
      expect(message(enInvalid.json)).toBe('Too small: expected number to be >=0');
      expect(message(ptInvalid.json)).not.toBe(message(enInvalid.json));
    });
  });

  describe('update', () => {
    it('answers 200 with an array holding the updated record; other fields keep their values', async () => {
      const record = await create();
      const response = await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, body: { stock: 7, description: null, activated: false } });
      expect(response.status).toBe(200);
      const [updated] = response.json as Record<string, unknown>[];
      expect(updated).toEqual({ ...record, stock: 7, description: null, activated: false, updatedAt: expect.stringMatching(ISO) });
      expect(Date.parse(String(updated!.updatedAt))).toBeGreaterThanOrEqual(Date.parse(String(record.updatedAt)));
      expect((await send({ method: 'GET', url: `/api/v1/products/${record.id}` })).json).toEqual([updated]);
    });

    it('answers 404 to an unknown id', async () => {
      const response = await send({ method: 'PUT', url: `/api/v1/products/${randomUUID()}`, body: { stock: 1 } });
      expect(response.status).toBe(404);
      expect(response.json).toMatchObject({ code: 'CRUD_NOT_FOUND' });
    });

    it.each([
      ['id', { id: randomUUID() }],
      ['createdAt', { createdAt: new Date().toISOString() }],
      ['updatedAt', { updatedAt: new Date().toISOString() }],
      ['an unknown field', { color: 'red' }],
      ['a price beyond the column', { price: 123456789.5 }],
      ['null for a required column', { name: null }],
    ])('answers 400 to a body carrying %s', async (_what, body) => {
      const record = await create();
      const response = await send({ method: 'PUT', url: `/api/v1/products/${record.id}`, body });
      expect(response.status).toBe(400);
      expect(response.json).toMatchObject({ code: 'PLATFORM_VALIDATION_FAILED' });
    });

    it('answers 400 to an id that is not a UUID', async () => {
      const response = await send({ method: 'PUT', url: '/api/v1/products/abc', body: { stock: 1 } });
      expect(response.status).toBe(400);
    });
  });

  describe('delete', () => {
    it('answers 204 with an empty body, then 404', async () => {
      const record = await create();
      const response = await send({ method: 'DELETE', url: `/api/v1/products/${record.id}` });
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      expect((await send({ method: 'GET', url: `/api/v1/products/${record.id}` })).status).toBe(404);
      expect((await send({ method: 'DELETE', url: `/api/v1/products/${record.id}` })).status).toBe(404);
    });

    it('answers 400 to an id that is not a UUID', async () => {
      expect((await send({ method: 'DELETE', url: '/api/v1/products/abc' })).status).toBe(400);
    });
  });

  describe('list', () => {
    // Records of this block carry their own name so filters isolate them from other tests.
    const tag = `List-${randomUUID().slice(0, 8)}`;
    let made: Record<string, unknown>[];
    const list = (query: string, headers: Record<string, string> = {}) => send({ method: 'GET', url: `/api/v1/products?${query}`, headers });
    const ids = (body: unknown) => (body as { id: string }[]).map((record) => record.id);

    beforeAll(async () => {
      made = [];
      for (const [i, category] of ['Fruits', 'Meats', 'Fruits', 'Hygiene', 'Fruits'].entries()) {
        made.push(await create({ name: tag, category, stock: i, price: i + 0.5, perishable: i % 2 === 0 }));
      }
    });

    it('answers the newest first by default, as an array of records', async () => {
      const response = await list(`name=${tag}`);
      expect(response.status).toBe(200);
      expect(response.json).toEqual([...made].reverse());
      expect(response.headers['content-range']).toBeUndefined();
      expect(response.headers.link).toBeUndefined();
    });

    it('pages with limit and offset and links the next and previous pages', async () => {
      const first = await list(`name=${tag}&limit=2&offset=0`);
      expect(ids(first.json)).toEqual([made[4]!.id, made[3]!.id]);
      expect(first.headers.link).toBe(`</api/v1/products?name=${tag}&limit=2&offset=2>; rel="next"`);
      const middle = await list(`name=${tag}&limit=2&offset=2`);
      expect(ids(middle.json)).toEqual([made[2]!.id, made[1]!.id]);
      expect(middle.headers.link).toBe(
        `</api/v1/products?name=${tag}&limit=2&offset=4>; rel="next", ` + `</api/v1/products?name=${tag}&limit=2&offset=0>; rel="prev"`,
      );
      const last = await list(`name=${tag}&limit=2&offset=4`);
      expect(ids(last.json)).toEqual([made[0]!.id]);
      expect(last.headers.link).toBe(`</api/v1/products?name=${tag}&limit=2&offset=2>; rel="prev"`);
    });

    it('sorts by any field, ascending or descending', async () => {
      expect(ids((await list(`name=${tag}&sort=stock`)).json)).toEqual(made.map((record) => record.id));
      expect(ids((await list(`name=${tag}&sort=-price`)).json)).toEqual([...made].reverse().map((record) => record.id));
      const byCategory = (await list(`name=${tag}&sort=category`)).json as { category: string }[];
      expect(byCategory.map((record) => record.category)).toEqual(['Fruits', 'Fruits', 'Fruits', 'Hygiene', 'Meats']);
    });

    it('breaks ties by id', async () => {
      const fruits = made.filter((record) => record.category === 'Fruits').map((record) => String(record.id)).sort();
      expect(ids((await list(`name=${tag}&category=Fruits&sort=category`)).json)).toEqual(fruits);
      expect(ids((await list(`name=${tag}&category=Fruits&sort=-category`)).json)).toEqual([...fruits].reverse());
    });

    it('filters by equality on typed fields', async () => {
      expect(ids((await list(`name=${tag}&category=Fruits`)).json)).toEqual([made[4]!.id, made[2]!.id, made[0]!.id]);
      expect(ids((await list(`name=${tag}&perishable=false`)).json)).toEqual([made[3]!.id, made[1]!.id]);
      expect(ids((await list(`name=${tag}&stock=3`)).json)).toEqual([made[3]!.id]);
      expect(ids((await list(`name=${tag}&price=2.5`)).json)).toEqual([made[2]!.id]);
      expect(ids((await list(`name=${tag}&activated=true&createdAt=${made[1]!.createdAt}`)).json)).toEqual([made[1]!.id]);
      expect((await list(`name=${tag}&category=Vegetables`)).json).toEqual([]);
    });

    it('answers the total as Content-Range only when Prefer: count=exact asks for it', async () => {
      const counted = await list(`name=${tag}&limit=2&offset=2`, { prefer: 'count=exact' });
      expect(counted.headers['content-range']).toBe('2-3/5');
      expect(counted.headers['preference-applied']).toBe('count=exact');
      const empty = await list(`name=${tag}&category=Vegetables`, { prefer: 'count=exact' });
      expect(empty.headers['content-range']).toBe('*/0');
      expect((await list(`name=${tag}&limit=2`)).headers['content-range']).toBeUndefined();
    });

    it.each([
      ['limit=0', 'query.limit'],
      ['limit=101', 'query.limit'],
      ['limit=ten', 'query.limit'],
      ['offset=-1', 'query.offset'],
      ['sort=color', 'query.sort'],
      ['sort=-', 'query.sort'],
      ['category=Toys', 'query.category'],
      ['perishable=maybe', 'query.perishable'],
      ['stock=abc', 'query.stock'],
      ['price=1.234', 'query.price'],
      ['createdAt=yesterday', 'query.createdAt'],
      ['id=00000000-0000-4000-8000-000000000000', 'query'],
      ['color=red', 'query'],
    ])('answers 400 to ?%s', async (query, path) => {
      const response = await list(query);
      expect(response.status).toBe(400);
      expect(errorsOf(response.json)).toEqual([path]);
    });

    it('accepts the largest limit', async () => {
      expect((await list(`name=${tag}&limit=100`)).status).toBe(200);
    });
  });
});
