import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { testModes } from '@app/testing';
import { aProduct, startCrud, type CrudHarness, type TestRequest } from './helper.js';

/**
 * A list page and a record read by id must agree to the byte, whatever the values hold, so a
 * client sees one representation of a record wherever it reads it (and a page's body could be
 * written by another path, such as Postgres's own JSON, only while this holds).
 */
describe.each(testModes())('list pages and reads by id, byte for byte (%s)', (mode) => {
  let crud: CrudHarness;
  let auth: Record<string, string>;
  const send = (request: TestRequest) => crud.send({ ...request, headers: { ...auth, ...request.headers } });
  const tag = `J${randomUUID().slice(0, 8)}`;
  const names = [
    'quote " and backslash \\',
    'newline \n tab \t return \r',
    'controls \u0001\u001f\u007f',
    'unicode é 漢字 🍌',
    'separators \u2028\u2029',
    'html </script> & <b>',
    'plain',
  ];
  const prices = [0, 0.01, 1.5, 10, 12345678.9, 99999999.99, 0.1];
  const created: string[] = [];

  beforeAll(async () => {
    crud = await startCrud(mode);
    auth = { authorization: `Bearer ${crud.token}` };
    for (const [i, name] of names.entries()) {
      const body = aProduct({ name: `${tag} ${name}`.slice(0, 50), price: prices[i], stock: i * 1000, perishable: i % 2 === 0, description: i % 3 === 0 ? undefined : `${name} described` });
      const response = await send({ method: 'POST', url: '/api/v1/products', body });
      expect(response.status).toBe(201);
      created.push((response.json as { id: string }[])[0]!.id);
    }
  });
  afterAll(() => crud.close());

  /** The records read one by one, in `ids` order, as JSON.stringify writes their array. */
  const readOneByOne = async (ids: string[]) => {
    const records: unknown[] = [];
    for (const id of ids) {
      const response = await send({ method: 'GET', url: `/api/v1/products/${id}` });
      expect(response.status).toBe(200);
      records.push(...(response.json as unknown[]));
    }
    return JSON.stringify(records);
  };

  it.each(['price', '-price', 'name', '-createdAt', 'stock'])('answers the same bytes as the records read by id, sorted by %s', async (sort) => {
    const page = await send({ method: 'GET', url: `/api/v1/products?name=like.${tag}*&sort=${sort}&limit=100` });
    expect(page.status).toBe(200);
    const ids = (page.json as { id: string }[]).map((record) => record.id);
    expect(new Set(ids)).toEqual(new Set(created));
    expect(page.text).toBe(await readOneByOne(ids));
  });

  it('answers a page beyond the last record as an empty array, and a partial page with no next link', async () => {
    const past = await send({ method: 'GET', url: `/api/v1/products?name=like.${tag}*&limit=5&offset=100` });
    expect(past.status).toBe(200);
    expect(past.text).toBe('[]');
    const first = await send({ method: 'GET', url: `/api/v1/products?name=like.${tag}*&sort=price&limit=5` });
    expect((first.json as unknown[]).length).toBe(5);
    expect(first.headers.link).toContain('rel="next"');
    const rest = await send({ method: 'GET', url: `/api/v1/products?name=like.${tag}*&sort=price&limit=5&offset=5` });
    expect((rest.json as unknown[]).length).toBe(2);
    expect(rest.headers.link ?? '').not.toContain('rel="next"');
  });
});
