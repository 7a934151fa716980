import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  booleanParam,
  createApp,
  createLogger,
  listHeadersSchema,
  listQuerySchema,
  pageOf,
  setPagingHeaders,
  wantsExactCount,
  type App,
} from '@app/platform';
import { z } from 'zod';

interface Item {
  id: string;
  name: string;
  featured: boolean;
  createdAt: string;
}

// Five items, the newest last; the "List conventions" the platform module implements are
// checked through a real route over them, as a service would serve its collection.
const ITEMS: Item[] = ['apple', 'banana', 'cherry', 'damson', 'elder'].map((name, i) => ({
  id: `00000000-0000-4000-8000-00000000000${i}`,
  name,
  featured: i % 2 === 0,
  createdAt: `2025-01-0${i + 1}T00:00:00.000Z`,
}));

const querySchema = listQuerySchema(['createdAt', 'name'], {
  name: z.string().optional(),
  featured: booleanParam.optional(),
});

let app: App;

beforeAll(async () => {
  const silent = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  app = await createApp({ name: 'list-test', version: '1.0.0', logger: createLogger({ LOG_LEVEL: 'info' }, silent), bodyLimit: 1024 });
  app.get('/parsed', { config: { auth: 'public' }, schema: { querystring: querySchema } }, async (request) => pageOf(request.query));
  app.get('/items', { config: { auth: 'public' }, schema: { querystring: querySchema, headers: listHeadersSchema } }, async (request, reply) => {
    const { page, filters } = pageOf(request.query);
    const sign = page.sort.direction === 'asc' ? 1 : -1;
    const field = page.sort.field as 'createdAt' | 'name';
    const matching = ITEMS.filter((item) => Object.entries(filters).every(([key, value]) => item[key as keyof Item] === value)).sort(
      (a, b) => sign * (a[field].localeCompare(b[field]) || a.id.localeCompare(b.id)),
    );
    const records = matching.slice(page.offset, page.offset + page.limit);
    const hasMore = matching.length > page.offset + page.limit;
    setPagingHeaders(request, reply, page, {
      returned: records.length,
      hasMore,
      ...(wantsExactCount(request) ? { total: matching.length } : {}),
    });
    return records.map((item) => item.name);
  });
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers });
const errorPaths = (body: unknown) => (body as { errors: { path: string }[] }).errors.map((error) => error.path);

describe('the list query schema', () => {
  it('defaults to the first 20 records, newest first, with no filters', async () => {
    const response = await get('/parsed');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ page: { limit: 20, offset: 0, sort: { field: 'createdAt', direction: 'desc' } }, filters: {} });
  });

  it('accepts the bounds of limit and offset', async () => {
    expect((await get('/parsed?limit=1&offset=0')).json()).toMatchObject({ page: { limit: 1, offset: 0 } });
    expect((await get('/parsed?limit=100&offset=1000')).json()).toMatchObject({ page: { limit: 100, offset: 1000 } });
  });

  it.each([
    ['limit=0', 'query.limit'],
    ['limit=101', 'query.limit'],
    ['limit=2.5', 'query.limit'],
    ['offset=-1', 'query.offset'],
    ['sort=color', 'query.sort'],
    ['sort=-', 'query.sort'],
    ['featured=yes', 'query.featured'],
    ['color=red', 'query'],
  ])('answers 400 to ?%s', async (query, path) => {
    const response = await get(`/parsed?${query}`);
    expect(response.statusCode).toBe(400);
    expect(errorPaths(response.json())).toEqual([path]);
  });

  it('parses sort as a field ascending, or descending when prefixed by "-"', async () => {
    expect((await get('/parsed?sort=name')).json()).toMatchObject({ page: { sort: { field: 'name', direction: 'asc' } } });
    expect((await get('/parsed?sort=-name')).json()).toMatchObject({ page: { sort: { field: 'name', direction: 'desc' } } });
    expect((await get('/parsed?sort=createdAt')).json()).toMatchObject({ page: { sort: { field: 'createdAt', direction: 'asc' } } });
  });

  it('splits off the typed filters that were given, and only those', async () => {
    expect((await get('/parsed?featured=false&limit=2')).json()).toEqual({
      page: { limit: 2, offset: 0, sort: { field: 'createdAt', direction: 'desc' } },
      filters: { featured: false },
    });
    expect((await get('/parsed?name=apple&featured=true')).json()).toMatchObject({ filters: { name: 'apple', featured: true } });
  });
});

describe('the Link header', () => {
  it('is absent when the whole list fits in the page', async () => {
    const response = await get('/items');
    expect(response.json()).toEqual(['elder', 'damson', 'cherry', 'banana', 'apple']);
    expect(response.headers.link).toBeUndefined();
  });

  it('links only the next page from the first page', async () => {
    const response = await get('/items?limit=2');
    expect(response.json()).toEqual(['elder', 'damson']);
    expect(response.headers.link).toBe('</items?limit=2&offset=2>; rel="next"');
  });

  it('links the next and previous pages from a middle page, keeping the other parameters', async () => {
    const response = await get('/items?sort=name&featured=true&limit=1&offset=1');
    expect(response.json()).toEqual(['cherry']);
    expect(response.headers.link).toBe(
      '</items?sort=name&featured=true&limit=1&offset=2>; rel="next", </items?sort=name&featured=true&limit=1&offset=0>; rel="prev"',
    );
  });

  it('links only the previous page from the last page, never before offset 0', async () => {
    const response = await get('/items?featured=true&offset=1&limit=2');
    expect(response.json()).toEqual(['cherry', 'apple']);
    expect(response.headers.link).toBe('</items?featured=true&offset=0&limit=2>; rel="prev"');
  });
});

describe('the total, opt-in with Prefer: count=exact', () => {
  const exact = { prefer: 'count=exact' };

  it('answers Content-Range <first>-<last>/<total> for a full page', async () => {
    const response = await get('/items?limit=2', exact);
    expect(response.headers['content-range']).toBe('0-1/5');
    expect(response.headers['preference-applied']).toBe('count=exact');
  });

  it('answers the range actually returned for a last partial page', async () => {
    const response = await get('/items?limit=2&offset=4', exact);
    expect(response.json()).toEqual(['apple']);
    expect(response.headers['content-range']).toBe('4-4/5');
  });

  it('answers */<total> for an empty page', async () => {
    expect((await get('/items?name=fig', exact)).headers['content-range']).toBe('*/0');
    expect((await get('/items?offset=10', exact)).headers['content-range']).toBe('*/5');
  });

  it('is not computed without the preference', async () => {
    const response = await get('/items?limit=2');
    expect(response.headers['content-range']).toBeUndefined();
    expect(response.headers['preference-applied']).toBeUndefined();
  });

  it.each(['return=minimal, count=exact', 'count=exact;handling=lenient', ' COUNT=EXACT '])('finds count=exact in "%s"', async (prefer) => {
    expect((await get('/items?limit=2', { prefer })).headers['content-range']).toBe('0-1/5');
  });

  it.each(['count=planned', 'count=estimated', 'return=minimal', 'count=exactly'])('ignores "%s"', async (prefer) => {
    const response = await get('/items?limit=2', { prefer });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-range']).toBeUndefined();
    expect(response.headers['preference-applied']).toBeUndefined();
  });

  it('answers 400 to a Prefer header longer than 200 characters', async () => {
    const response = await get('/items', { prefer: `count=exact, ${'x'.repeat(200)}` });
    expect(response.statusCode).toBe(400);
    expect(errorPaths(response.json())).toEqual(['headers.prefer']);
  });
});
