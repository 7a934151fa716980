import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { testModes } from '@app/testing';
import { aProduct, startCrud, type CrudHarness, type TestRequest, type TestResponse } from './helper.js';

interface Product {
  id: string;
  name: string;
  price: number;
  description: string | null;
  createdAt: string;
}

/** The URL of the Link header's `rel`, if it has one. */
const linkOf = (response: TestResponse, rel: string) =>
  (response.headers.link ?? '')
    .split(', ')
    .map((link) => /^<([^>]*)>; rel="(\w+)"$/.exec(link))
    .find((match) => match?.[2] === rel)?.[1];

describe.each(testModes())('product lists paged by cursor (%s)', (mode) => {
  let crud: CrudHarness;
  let auth: Record<string, string>;
  const send = (request: TestRequest) => crud.send({ ...request, headers: { ...auth, ...request.headers } });
  // Every name starts with the tag, so `name=like.<tag>*` isolates this suite's records.
  const tag = `C${randomUUID().slice(0, 8)}`;
  const mine = `name=like.${tag}*`;
  const create = async (fields: Partial<Product>) => {
    const response = await send({ method: 'POST', url: '/api/v1/products', body: aProduct({ name: `${tag} ${randomUUID().slice(0, 6)}`, ...fields }) });
    expect(response.status).toBe(201);
    return (response.json as Product[])[0]!;
  };
  const list = (query: string, headers: Record<string, string> = {}) => send({ method: 'GET', url: `/api/v1/products?${mine}&${query}`, headers });

  /** Every page of a list from its first, following rel="next"; the records in the order answered. */
  const walk = async (query: string, between: () => Promise<void> = async () => undefined) => {
    const seen: Product[] = [];
    let response = await list(query);
    for (;;) {
      expect(response.status).toBe(200);
      seen.push(...(response.json as Product[]));
      const next = linkOf(response, 'next');
      if (!next) return seen;
      expect(next).toContain('cursor=');
      await between();
      response = await send({ method: 'GET', url: next });
    }
  };

  /** The order the kit promises: the field's values (nulls after every value), then the id, both in the sort's direction. */
  const inOrder = (records: Product[], field: 'price' | 'description', direction: 1 | -1) =>
    records.every((record, i) => {
      if (i === 0) return true;
      const previous = records[i - 1]!;
      const [a, b] = [previous[field], record[field]];
      const byValue = a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1;
      return direction * (byValue || (previous.id < record.id ? -1 : 1)) < 0;
    });

  beforeAll(async () => {
    crud = await startCrud(mode);
    auth = { authorization: `Bearer ${crud.token}` };
    // Ties on price (three prices for eleven records) and nulls in description.
    for (let i = 0; i < 11; i += 1) await create({ price: [5, 7.5, 10][i % 3]!, description: i % 4 === 0 ? null : `d${i % 5}` });
  });
  afterAll(() => crud.close());

  it.each(['price', '-price', 'description', '-description', 'createdAt', '-name'])('answers every record exactly once, in order, sorted by %s', async (sort) => {
    const whole = await list(`sort=${sort}&limit=100`);
    expect(whole.status).toBe(200);
    const walked = await walk(`sort=${sort}&limit=3`);
    expect(walked.map((record) => record.id)).toEqual((whole.json as Product[]).map((record) => record.id));
    expect(new Set(walked.map((record) => record.id)).size).toBe(walked.length);
    expect(walked.length).toBeGreaterThanOrEqual(11);
  });

  it('orders ties by id, and nulls after every value in either direction', async () => {
    const byPrice = await walk('sort=price&limit=2');
    expect(inOrder(byPrice, 'price', 1)).toBe(true);
    expect(inOrder(await walk('sort=-price&limit=2'), 'price', -1)).toBe(true);
    const ascending = await walk('sort=description&limit=2');
    expect(inOrder(ascending, 'description', 1)).toBe(true);
    expect(ascending.at(-1)!.description).toBeNull();
    const descending = await walk('sort=-description&limit=2');
    expect(inOrder(descending, 'description', -1)).toBe(true);
    expect(descending[0]!.description).toBeNull();
  });

  it('answers, across inserts and deletes between its pages, every record that stayed exactly once and none twice', async () => {
    const before = (await list('sort=price&limit=100').then((response) => response.json)) as Product[];
    const deleted = new Set<string>();
    const inserted = new Set<string>();
    let step = 0;
    const walked = await walk('sort=price&limit=2', async () => {
      step += 1;
      // Over the first pages, one record inserted at each end of the order and one in its middle,
      // one deleted ahead of the walk and one behind it: a moving list under a reader.
      if (step > 3) return;
      for (const price of [0, 7.5, 99]) inserted.add((await create({ price, description: `new ${step}` })).id);
      const remaining = before.filter((record) => !deleted.has(record.id));
      for (const victim of [remaining.at(-1), remaining[0]]) {
        if (!victim || deleted.has(victim.id)) continue;
        expect((await send({ method: 'DELETE', url: `/api/v1/products/${victim.id}` })).status).toBe(204);
        deleted.add(victim.id);
      }
    });
    const ids = walked.map((record) => record.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(inOrder(walked, 'price', 1)).toBe(true);
    const stayed = before.filter((record) => !deleted.has(record.id)).map((record) => record.id);
    expect(ids.filter((id) => !inserted.has(id))).toEqual(expect.arrayContaining(stayed));
    expect(stayed.length).toBeGreaterThan(0);
    expect(deleted.size).toBeGreaterThan(2);
  });

  describe('a bad cursor is a 400 naming cursor, never a page', () => {
    const problemOf = async (query: string) => {
      const response = await list(query, { 'accept-language': 'en' });
      expect(response.status).toBe(400);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      const { errors } = response.json as { errors: { path: string; message: string }[] };
      expect(errors.map((error) => error.path)).toEqual(['query.cursor']);
      return errors[0]!.message;
    };
    const cursorOf = async (query: string) => new URLSearchParams(linkOf(await list(query), 'next')!.split('?')[1]).get('cursor')!;
    const reencode = (cursor: string, change: Record<string, unknown>) =>
      Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(cursor, 'base64url').toString()), ...change })).toString('base64url');

    it('refuses garbage and a cursor edited by hand', async () => {
      const cursor = await cursorOf('sort=price&limit=2');
      for (const bad of ['x', '!!!', Buffer.from('{"v":"1"}').toString('base64url'), reencode(cursor, { v: '999' }), reencode(cursor, { id: randomUUID() }), reencode(cursor, { v: 'abc' })]) {
        expect(await problemOf(`sort=price&cursor=${bad}`)).toMatch(/not made by this list/);
      }
    });

    it('refuses a cursor made for another sort or other filters, and one given with offset', async () => {
      const cursor = await cursorOf('sort=price&limit=2');
      expect(await problemOf(`sort=-price&cursor=${cursor}`)).toMatch(/another sort or other filters/);
      expect(await problemOf(`sort=name&cursor=${cursor}`)).toMatch(/another sort or other filters/);
      expect(await problemOf(`sort=price&category=Fruits&cursor=${cursor}`)).toMatch(/another sort or other filters/);
      expect(await problemOf(`sort=price&offset=2&cursor=${cursor}`)).toMatch(/cursor or offset, not both/);
    });
  });

  describe('Prefer: count', () => {
    it('answers the total of a small list exactly with count=estimated, marked as applied', async () => {
      const exact = await list('limit=2', { prefer: 'count=exact' });
      const total = exact.headers['content-range']!.split('/')[1];
      expect(Number(total)).toBeGreaterThan(2);
      const estimated = await list('limit=2', { prefer: 'count=estimated' });
      expect(estimated.headers['content-range']).toBe(`0-1/${total}`);
      expect(estimated.headers['preference-applied']).toBe('count=estimated');
    });

    it('answers a number with count=estimated for an unfiltered list, and */<total> for a page from a cursor', async () => {
      const whole = await send({ method: 'GET', url: '/api/v1/products?limit=1', headers: { prefer: 'count=estimated' } });
      expect(whole.headers['content-range']).toMatch(/^0-0\/\d+$/);
      const next = linkOf(await list('sort=price&limit=2'), 'next')!;
      const fromCursor = await send({ method: 'GET', url: next, headers: { prefer: 'count=estimated' } });
      expect(fromCursor.headers['content-range']).toMatch(/^\*\/\d+$/);
    });
  });
});
