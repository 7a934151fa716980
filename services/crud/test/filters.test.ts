import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { testModes } from '@app/testing';
import { aProduct, startCrud, type CrudHarness, type TestRequest, type Transport } from './helper.js';

const cases = testModes().flatMap((mode) => (['inject', 'gateway'] as Transport[]).map((transport) => [mode, transport] as const));

describe.each(cases)('product list filters in PostgREST syntax (%s, through %s)', (mode, transport) => {
  let crud: CrudHarness;
  let auth: Record<string, string>;
  const send = (request: TestRequest) => crud.send({ ...request, headers: { ...auth, ...request.headers } });
  // Every name starts with the tag, so `name=like.<tag>*` isolates this block's records.
  const tag = `F${randomUUID().slice(0, 8)}`;
  const mine = `name=like.${tag}*`;
  const made: Record<string, Record<string, unknown>> = {};
  const list = (query: string, headers: Record<string, string> = {}) =>
    send({ method: 'GET', url: `/api/v1/products?${mine}&sort=price&${query}`, headers });
  /** The names (without the tag) of the records a list answered, in its order. */
  const names = async (query: string) => {
    const response = await list(query);
    expect(response.status).toBe(200);
    return (response.json as { name: string }[]).map((record) => record.name.slice(tag.length + 1));
  };
  const validationProblem = (path: string, message: string, detail = 'The request is invalid; see "errors" for each problem.') => ({
    type: 'urn:problem:platform-validation-failed',
    title: expect.any(String),
    status: 400,
    detail,
    instance: '/api/v1/products',
    code: 'PLATFORM_VALIDATION_FAILED',
    requestId: expect.any(String),
    errors: [{ path, message }],
  });

  beforeAll(async () => {
    crud = await startCrud(mode, transport);
    auth = { authorization: `Bearer ${crud.token}` };
    const products = [
      { name: 'Apple', price: 5, stock: 0, category: 'Fruits', perishable: true, description: 'Crisp, 100% red' },
      { name: 'Banana', price: 10, stock: 10, category: 'Fruits', perishable: true, description: null },
      { name: 'Carrot', price: 15.5, stock: 20, category: 'Vegetables', perishable: false, description: 'under_score' },
      { name: 'Dish soap', price: 20, stock: 30, category: 'Hygiene', perishable: false, description: 'a,b "quoted"' },
    ];
    for (const product of products) {
      const response = await send({ method: 'POST', url: '/api/v1/products', body: aProduct({ ...product, name: `${tag} ${product.name}` }) });
      expect(response.status).toBe(201);
      made[product.name] = (response.json as Record<string, unknown>[])[0]!;
    }
  });
  afterAll(() => crud.close());

  describe('operators', () => {
    it('combines several conditions on one field with AND: a price range', async () => {
      expect(await names('price=gte.10&price=lt.20')).toEqual(['Banana', 'Carrot']);
    });

    it('keeps a bare value as equality, the same as eq', async () => {
      expect(await names('price=10')).toEqual(['Banana']);
      expect(await names('price=eq.10')).toEqual(['Banana']);
      expect(await names('category=Vegetables')).toEqual(['Carrot']);
    });

    it('compares with neq, gt, gte, lt and lte', async () => {
      expect(await names('category=neq.Fruits')).toEqual(['Carrot', 'Dish soap']);
      expect(await names('stock=gt.0&stock=lte.20')).toEqual(['Banana', 'Carrot']);
      expect(await names('price=lt.10')).toEqual(['Apple']);
      expect(await names('price=gte.20')).toEqual(['Dish soap']);
    });

    it('matches like case-sensitively and ilike in any case, with * as the wildcard', async () => {
      expect(await names('name=like.*apple')).toEqual([]);
      expect(await names('name=ilike.*apple')).toEqual(['Apple']);
      expect(await names('name=like.*an*an*')).toEqual(['Banana']);
    });

    it('matches % and _ literally in like patterns', async () => {
      expect(await names('description=like.*100%25*')).toEqual(['Apple']);
      expect(await names('description=like.*_*')).toEqual(['Carrot']);
      expect(await names('description=like.%25')).toEqual([]);
    });

    it('selects one of a list with in, a double-quoted value holding a comma or an escaped quote', async () => {
      expect(await names('category=in.(Vegetables,Hygiene)')).toEqual(['Carrot', 'Dish soap']);
      expect(await names(`description=in.(${encodeURIComponent('"a,b \\"quoted\\""')},other)`)).toEqual(['Dish soap']);
      expect(await names('price=in.(5,20)')).toEqual(['Apple', 'Dish soap']);
    });

    it('tests null, true and false with is', async () => {
      expect(await names('description=is.null')).toEqual(['Banana']);
      expect(await names('perishable=is.false')).toEqual(['Carrot', 'Dish soap']);
    });

    it('negates any operator with not.', async () => {
      expect(await names('description=not.is.null')).toEqual(['Apple', 'Carrot', 'Dish soap']);
      expect(await names('price=not.gte.10')).toEqual(['Apple']);
      expect(await names('category=not.in.(Fruits,Hygiene)')).toEqual(['Carrot']);
    });

    it('ANDs the filters of different fields', async () => {
      expect(await names('category=Fruits&price=gt.5')).toEqual(['Banana']);
      expect(await names('perishable=eq.false&description=ilike.*QUOTED*')).toEqual(['Dish soap']);
    });

    it('filters instants with ranges', async () => {
      expect(await names('createdAt=lt.2000-01-01T00:00:00Z')).toEqual([]);
      expect(await names(`createdAt=gte.${String(made.Apple!.createdAt)}`)).toEqual(['Apple', 'Banana', 'Carrot', 'Dish soap']);
    });

    it('keeps every condition in the Link header and counts what they match', async () => {
      const response = await list('price=gte.10&price=lt.20&limit=1', { prefer: 'count=exact' });
      expect(response.status).toBe(200);
      expect(response.headers['content-range']).toBe('0-0/2');
      const next = /^<([^>]+)>; rel="next"$/.exec(String(response.headers.link))?.[1];
      expect(next).toMatch(new RegExp(`^/api/v1/products\\?name=like\\.${tag}\\*&sort=price&price=gte\\.10&price=lt\\.20&limit=1&cursor=[\\w-]+$`));
      const second = await send({ method: 'GET', url: next! });
      expect((second.json as { name: string }[]).map((record) => record.name)).toEqual([`${tag} Carrot`]);
      expect(second.headers.link).not.toContain('rel="next"');
    });
  });

  describe('rejects with 400, naming the field', () => {
    it.each([
      ['an unknown operator', 'price=between.1', 'query.price', 'Unknown operator "between": write op.value with op one of eq, neq, gt, gte, lt, lte, in, is, e.g. gte.10.'],
      ['like on a number', 'stock=like.1*', 'query.stock', 'The operator "like" does not apply to this field; use one of eq, neq, gt, gte, lt, lte, in, is, e.g. gte.10.'],
      ['gt on a boolean', 'perishable=gt.true', 'query.perishable', 'The operator "gt" does not apply to this field; use one of eq, neq, is, e.g. is.true.'],
      ['ilike on an enum', 'category=ilike.f*', 'query.category', 'The operator "ilike" does not apply to this field; use one of eq, neq, in, is, e.g. in.(Fruits,Vegetables).'],
      ['a number that does not parse', 'price=gte.ten', 'query.price', 'Must be a number, such as 10 or 9.99.'],
      ['an integer that does not parse', 'stock=lt.1.5', 'query.stock', 'Must be a whole number, such as 10.'],
      ['a number the column cannot hold', 'price=gt.1.234', 'query.price', 'Invalid number: must be a multiple of 0.01'],
      ['an empty in list', 'category=in.()', 'query.category', 'The list after "in." is empty; give at least one value, e.g. in.(a,b).'],
      [
        'an in list without its closing parenthesis',
        'category=in.(Fruits',
        'query.category',
        'Write a list as in.(a,b), in double quotes a value that holds a comma, a parenthesis or a quote: in.("a,b",c).',
      ],
      ['an in list with a value the field cannot hold', 'category=in.(Fruits,Toys)', 'query.category', 'Invalid option: expected one of "Fruits"|"Vegetables"|"Meats"|"Hygiene"'],
      ['is.true on a number', 'stock=is.true', 'query.stock', 'After "is." write null.'],
      ['is with anything but null, true or false', 'perishable=is.maybe', 'query.perishable', 'After "is." write null, true or false.'],
      ['an instant that does not parse', 'createdAt=gt.yesterday', 'query.createdAt', 'Invalid ISO datetime'],
    ])('answers 400 to %s (?%s)', async (_case, query, path, message) => {
      const response = await send({ method: 'GET', url: `/api/v1/products?${query}` });
      expect(response.status).toBe(400);
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(response.json).toEqual(validationProblem(path, message));
    });

    it('answers 400 to a filter on an unknown field, whatever its operator', async () => {
      const response = await send({ method: 'GET', url: '/api/v1/products?color=eq.red' });
      expect(response.status).toBe(400);
      expect(response.json).toEqual(validationProblem('query', 'Unrecognized key: "color"'));
    });

    it('answers 400 to more than 10 conditions on one field', async () => {
      const response = await send({ method: 'GET', url: `/api/v1/products?${Array.from({ length: 11 }, () => 'price=gt.1').join('&')}` });
      expect(response.status).toBe(400);
      expect(response.json).toEqual(validationProblem('query.price', 'At most 10 conditions on one field.'));
    });

    it('answers 400 to more than 100 values in one list', async () => {
      const response = await send({ method: 'GET', url: `/api/v1/products?stock=in.(${Array.from({ length: 101 }, (_, i) => i).join(',')})` });
      expect(response.status).toBe(400);
      expect(response.json).toEqual(validationProblem('query.stock', 'At most 100 values in one list.'));
    });

    it('words the message in the caller’s language', async () => {
      const portuguese = await send({ method: 'GET', url: '/api/v1/products?perishable=gt.true', headers: { 'accept-language': 'pt-BR' } });
      expect(portuguese.status).toBe(400);
      expect(portuguese.json).toEqual(
        validationProblem(
          'query.perishable',
          'O operador "gt" não se aplica a este campo; use um entre eq, neq, is, por exemplo is.true.',
          'A requisição é inválida; veja "errors" para cada problema.',
        ),
      );
      const german = await send({ method: 'GET', url: '/api/v1/products?category=in.()', headers: { 'accept-language': 'de' } });
      expect(german.json).toMatchObject({ errors: [{ path: 'query.category', message: 'Die Liste nach „in.“ ist leer; geben Sie mindestens einen Wert an, z. B. in.(a,b).' }] });
    });
  });

  describe('injection', () => {
    it.each([
      ["eq.x' or '1'='1", 'name'],
      [`in.(${encodeURIComponent(`"x') or true --"`)},y)`, 'name'],
      [`like.${encodeURIComponent("*'; drop table crud.product; --*")}`, 'description'],
      [`ilike.${encodeURIComponent('*\\*')}`, 'description'],
    ])('treats %s on %s as a value, never as SQL', async (filter, field) => {
      expect(await names(`${field}=${filter}`)).toEqual([]);
      expect(await names('')).toEqual(['Apple', 'Banana', 'Carrot', 'Dish soap']);
    });

    it('answers 400 to a field name that tries to be SQL', async () => {
      const response = await send({ method: 'GET', url: `/api/v1/products?${encodeURIComponent('name" or 1=1 --')}=x` });
      expect(response.status).toBe(400);
      expect((response.json as { errors: { path: string }[] }).errors.map((error) => error.path)).toEqual(['query']);
    });
  });

  describe('cached pages', () => {
    it('never answers one filter set with the page of another, and treats the same set in another order as one', async () => {
      expect(await names('price=gte.10&price=lt.20')).toEqual(['Banana', 'Carrot']);
      expect(await names('price=lt.20&price=gte.10')).toEqual(['Banana', 'Carrot']);
      expect(await names('price=gte.15&price=lt.20')).toEqual(['Carrot']);
      expect(await names('price=gte.10&price=not.lt.20')).toEqual(['Dish soap']);
    });

    it('drops a cached filtered page when a record changes', async () => {
      expect(await names('stock=gte.30')).toEqual(['Dish soap']);
      const updated = await send({ method: 'PUT', url: `/api/v1/products/${String(made.Carrot!.id)}`, body: { stock: 31 } });
      expect(updated.status).toBe(200);
      expect(await names('stock=gte.30')).toEqual(['Carrot', 'Dish soap']);
      await send({ method: 'PUT', url: `/api/v1/products/${String(made.Carrot!.id)}`, body: { stock: 20 } });
    });
  });
});
