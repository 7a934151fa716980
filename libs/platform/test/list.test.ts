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
  countPreference,
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
    const compare = (a: Pick<Item, 'id' | typeof field>, b: Pick<Item, 'id' | typeof field>) => sign * (a[field].localeCompare(b[field]) || a.id.localeCompare(b.id));
    const matching = ITEMS.filter((item) => Object.entries(filters).every(([key, value]) => item[key as keyof Item] === value)).sort(compare);
    const { after } = page;
    const rest = after ? matching.filter((item) => compare(item, { id: after.id, name: String(after.value), createdAt: String(after.value) }) > 0) : matching;
    const records = rest.slice(page.offset, page.offset + page.limit);
    const last = records.at(-1);
    setPagingHeaders(request, reply, page, {
      returned: records.length,
      hasMore: rest.length > page.offset + page.limit,
      ...(last ? { last: { value: last[field], id: last.id } } : {}),
      ...(countPreference(request) ? { total: matching.length } : {}),
    });
    return records.map((item) => item.name);
  });
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers });
/** The URL of the Link header's `rel`, if it has one. */
const linkOf = (response: { headers: Record<string, unknown> }, rel: string) =>
  String(response.headers.link ?? '')
    .split(', ')
    .map((link) => /^<([^>]*)>; rel="(\w+)"$/.exec(link))
    .find((match) => match?.[2] === rel)?.[1];
const errorPaths = (body: unknown) => (body as { errors: { path: string }[] }).errors.map((error) => error.path);

describe('the list query schema', () => {
  it('defaults to the first 20 records, newest first, with no filters', async () => {
    const response = await get('/parsed');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      page: { limit: 20, offset: 0, sort: { field: 'createdAt', direction: 'desc' }, paging: 'keyset', fingerprint: expect.any(String) },
      filters: {},
    });
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
      page: { limit: 2, offset: 0, sort: { field: 'createdAt', direction: 'desc' }, paging: 'keyset', fingerprint: expect.any(String) },
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

  it('links the next page of a first page by cursor, and each page after by the cursor after its last record', async () => {
    const first = await get('/items?limit=2');
    expect(first.json()).toEqual(['elder', 'damson']);
    expect(first.headers.link).toMatch(/^<\/items\?limit=2&cursor=[\w-]+>; rel="next"$/);
    const second = await get(linkOf(first, 'next')!);
    expect(second.json()).toEqual(['cherry', 'banana']);
    expect(linkOf(second, 'first')).toBe('/items?limit=2');
    const last = await get(linkOf(second, 'next')!);
    expect(last.json()).toEqual(['apple']);
    expect(linkOf(last, 'next')).toBeUndefined();
  });

  it('keeps the other parameters in a cursor link, and links by offset only a page asked for by offset', async () => {
    const first = await get('/items?sort=name&featured=true&limit=1');
    expect(linkOf(first, 'next')).toMatch(/^\/items\?sort=name&featured=true&limit=1&cursor=[\w-]+$/);
    expect(linkOf(await get('/items?sort=name&featured=true&limit=1&offset=0'), 'next')).toBe('/items?sort=name&featured=true&limit=1&offset=1');
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

  it('applies count=estimated as such, and count=exact when both are asked for', async () => {
    const estimated = await get('/items?limit=2', { prefer: 'count=estimated' });
    expect(estimated.headers['content-range']).toBe('0-1/5');
    expect(estimated.headers['preference-applied']).toBe('count=estimated');
    expect((await get('/items?limit=2', { prefer: 'count=estimated, count=exact' })).headers['preference-applied']).toBe('count=exact');
  });

  it('answers */<total> for a page that starts at a cursor, whose position is not counted', async () => {
    const next = linkOf(await get('/items?limit=2'), 'next')!;
    const response = await get(next, { prefer: 'count=exact' });
    expect(response.json()).toEqual(['cherry', 'banana']);
    expect(response.headers['content-range']).toBe('*/5');
  });

  it.each(['count=planned', 'return=minimal', 'count=exactly'])('ignores "%s"', async (prefer) => {
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

describe('the cursor', () => {
  const cursorOf = async (query: string) => new URL(linkOf(await get(`/items?${query}`), 'next')!, 'http://x').searchParams.get('cursor')!;
  const problemOf = async (url: string, headers: Record<string, string> = {}) => {
    const response = await get(url, headers);
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(errorPaths(response.json())).toEqual(['query.cursor']);
    return (response.json() as { errors: { message: string }[] }).errors[0]!.message;
  };

  it('is refused, naming cursor, when it is not one the list made', async () => {
    for (const garbage of ['x', 'not%20a%20cursor', 'e30', Buffer.from('{"f":1}').toString('base64url'), Buffer.from('[]').toString('base64url'), 'a'.repeat(2000)]) {
      expect(await problemOf(`/items?cursor=${garbage}`)).toMatch(/not made by this list/);
    }
  });

  it('is refused when it was edited: its checksum no longer holds', async () => {
    const cursor = await cursorOf('limit=2');
    const payload = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as { v: string };
    const edited = Buffer.from(JSON.stringify({ ...payload, v: '2025-01-02T00:00:00.000Z' })).toString('base64url');
    expect(await problemOf(`/items?limit=2&cursor=${edited}`)).toMatch(/not made by this list/);
  });

  it('is refused with another sort or other filters than the list it was made for, and with offset', async () => {
    const cursor = await cursorOf('sort=name&featured=true&limit=1');
    expect((await get(`/items?sort=name&featured=true&limit=2&cursor=${cursor}`)).statusCode).toBe(200); // limit may change
    expect((await get(`/items?featured=true&sort=name&cursor=${cursor}`)).statusCode).toBe(200); // so may the order of parameters
    expect(await problemOf(`/items?sort=-name&featured=true&cursor=${cursor}`)).toMatch(/another sort or other filters/);
    expect(await problemOf(`/items?sort=name&featured=false&cursor=${cursor}`)).toMatch(/another sort or other filters/);
    expect(await problemOf(`/items?sort=name&cursor=${cursor}`)).toMatch(/another sort or other filters/);
    expect(await problemOf(`/items?sort=name&featured=true&offset=0&cursor=${cursor}`)).toMatch(/cursor or offset, not both/);
  });

  it("words the problem in the caller's language", async () => {
    expect(await problemOf('/items?cursor=x', { 'accept-language': 'fr' })).toMatch(/^Ce curseur/);
  });
});
