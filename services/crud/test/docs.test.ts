import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startCrud, type CrudHarness } from './helper.js';

describe('OpenAPI of the crud service', () => {
  let crud: CrudHarness;
  let document: {
    paths: Record<string, Record<string, { tags: string[]; summary: string; security?: unknown[]; responses: Record<string, unknown>; parameters?: { name: string; in: string; description?: string; schema?: unknown; examples?: unknown; example?: unknown }[] }>>;
    components: { schemas: Record<string, unknown>; headers?: Record<string, unknown> };
  };
  beforeAll(async () => {
    crud = await startCrud('embedded', 'gateway');
    document = (await crud.send({ method: 'GET', url: '/docs/json' })).json as typeof document;
  });
  afterAll(() => crud.close());

  it.each([
    ['products', 'Product'],
    ['posts', 'Post'],
  ])('shows the six %s routes in the gateway’s merged docs, tagged %s, each with a summary', (plural, tag) => {
    const routes = [
      ['get', `/api/v1/${plural}/ping`, ['200', '500']],
      ['get', `/api/v1/${plural}/{id}`, ['200', '304', '400', '401', '404', '500']],
      ['get', `/api/v1/${plural}`, ['200', '400', '401', '500']],
      ['post', `/api/v1/${plural}`, ['201', '400', '401', '409', '422', '500']],
      ['put', `/api/v1/${plural}/{id}`, ['200', '400', '401', '404', '412', '422', '500']],
      ['delete', `/api/v1/${plural}/{id}`, ['204', '400', '401', '404', '412', '500']],
    ] as const;
    for (const [method, path, statuses] of routes) {
      const operation = document.paths[path]?.[method];
      expect(operation).toBeDefined();
      expect(operation!.tags).toEqual([tag]);
      expect(operation!.summary.length).toBeGreaterThan(5);
      expect(Object.keys(operation!.responses).sort()).toEqual([...statuses].sort());
      if (!path.endsWith('/ping')) expect(operation!.security).toEqual([{ bearerAuth: [] }]);
    }
    expect(Object.keys(document.components.schemas)).toEqual(expect.arrayContaining([tag, `${tag}Create`, `${tag}Update`, 'Problem']));
  });

  it('documents ETag on reads and writes, Location on 201, the 304 and the 412 (problem+json)', () => {
    const operations = document.paths['/api/v1/products/{id}']!;
    const responses = (operation: { responses: Record<string, unknown> } | undefined) =>
      operation!.responses as Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema: unknown }> }>;
    const headerNames = (response: { headers?: Record<string, unknown> } | undefined) => Object.keys(response?.headers ?? {}).sort();
    expect(headerNames(responses(operations.get)['200'])).toEqual(['ETag']);
    expect(headerNames(responses(operations.put)['200'])).toEqual(['ETag']);
    expect(headerNames(responses(document.paths['/api/v1/products']!.post)['201'])).toEqual(['ETag', 'Location']);
    expect(responses(operations.get)['304']).toMatchObject({ headers: { ETag: { $ref: '#/components/headers/ETag' } } });
    expect(document.components?.headers?.ETag).toMatchObject({ schema: { type: 'string' } });
    expect(responses(operations.get)['304']!.content).toBeUndefined();
    for (const operation of [operations.put, operations.delete]) {
      expect(responses(operation)['412']!.content).toEqual({ 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } });
    }
  });

  it('documents the list query: paging by offset or cursor, sort and a filter per field but id', () => {
    const parameters = document.paths['/api/v1/products']!.get!.parameters!.filter((p) => p.in === 'query').map((p) => p.name);
    expect(parameters.sort()).toEqual(
      ['limit', 'offset', 'cursor', 'sort', 'name', 'price', 'description', 'stock', 'category', 'perishable', 'activated', 'createdAt', 'updatedAt'].sort(),
    );
  });

  it('documents each filter’s operators in PostgREST syntax, with an example', () => {
    const parameters = document.paths['/api/v1/products']!.get!.parameters!.filter((p) => p.in === 'query');
    const byName = Object.fromEntries(parameters.map((p) => [p.name, p]));
    expect(byName.price).toMatchObject({ example: 'gte.10', schema: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }] } });
    expect(byName.price!.description).toContain('`eq`, `neq`, `gt`, `gte`, `lt`, `lte`, `in`, `is`');
    expect(byName.name).toMatchObject({ example: 'ilike.*a*' });
    expect(byName.name!.description).toContain('`*` is the wildcard of like/ilike');
    expect(byName.category).toMatchObject({ example: 'in.(Fruits,Vegetables)' });
    expect(byName.perishable).toMatchObject({ example: 'is.true' });
    expect(byName.createdAt).toMatchObject({ example: 'gte.2025-01-01T00:00:00Z' });
  });
});
