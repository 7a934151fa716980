import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { camelCase, createApp, createLogger, declareAuth, derivedOperationId, EDGE_ROUTES, listQuerySchema, problemSchema, type App } from '@app/platform';
import { z } from 'zod';

describe('operationIds', () => {
  it('joins words into camelCase, dropping separators', () => {
    expect(camelCase('list', 'blog-posts')).toBe('listBlogPosts');
    expect(camelCase('get', 'blog_post')).toBe('getBlogPost');
  });

  it('derives one from the method and path, without the version prefix, parameters as By<Name>', () => {
    expect(derivedOperationId('get', '/api/v1/sso/jwks')).toBe('getSsoJwks');
    expect(derivedOperationId('put', '/api/v1/identity/{id}')).toBe('putIdentityById');
    expect(derivedOperationId('get', '/.well-known/openid-configuration')).toBe('getWellKnownOpenidConfiguration');
  });
});

describe('a service document, finished by the kit', () => {
  let app: App;
  let document: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- assertions check the shape

  beforeAll(async () => {
    app = await createApp({
      name: 'test',
      version: '1.0.0',
      logger: createLogger({ LOG_LEVEL: 'silent' }),
      bodyLimit: 1024,
      tags: [{ name: 'Thing', description: 'Things' }],
    });
    const body = z.strictObject({ name: z.string() }).meta({ id: 'ThingBody' });
    const thing = z.object({ id: z.string(), name: z.string() }).meta({ id: 'Thing' });
    app.get(
      '/things',
      {
        config: { auth: 'authenticated' },
        schema: { tags: ['Thing'], querystring: listQuerySchema(['name'], {}), response: { 200: z.array(thing), 400: problemSchema } },
      },
      async () => [],
    );
    app.post(
      '/things',
      {
        config: { auth: 'optional' },
        schema: {
          tags: ['Thing'],
          operationId: 'createThing',
          body,
          response: { 201: thing, 429: problemSchema, 503: z.object({ status: z.string() }) },
          responseHeaders: { 201: ['Location'] },
        },
      },
      async (_request, reply) => reply.code(201).send({ id: '1', name: 'x' }),
    );
    app.get('/things/:id/ping', { config: { auth: 'public' }, schema: { tags: ['Thing'], response: { 204: z.null() } } }, async (_r, reply) => reply.code(204).send(null));
    document = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  });
  afterAll(() => app.close());

  it('keeps a declared operationId and derives the others', () => {
    expect(document.paths['/things'].post.operationId).toBe('createThing');
    expect(document.paths['/things'].get.operationId).toBe('getThings');
    expect(document.paths['/things/{id}/ping'].get.operationId).toBe('getThingsByIdPing');
  });

  it('types a Problem error as application/problem+json, and leaves any other error body alone', () => {
    expect(document.paths['/things'].get.responses['400']).toEqual({
      description: 'Bad Request',
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    });
    expect(Object.keys(document.paths['/things'].post.responses['503'].content)).toEqual(['application/json']);
  });

  it('documents paging headers on a list, Retry-After on a 429 problem, and what the route declares', () => {
    const headerRefs = (responses: Record<string, { headers?: object }>, status: string) => responses[status]!.headers;
    expect(headerRefs(document.paths['/things'].get.responses, '200')).toEqual({
      Link: { $ref: '#/components/headers/Link' },
      'Content-Range': { $ref: '#/components/headers/Content-Range' },
      'Preference-Applied': { $ref: '#/components/headers/Preference-Applied' },
    });
    expect(headerRefs(document.paths['/things'].post.responses, '429')).toEqual({ 'Retry-After': { $ref: '#/components/headers/Retry-After' } });
    // Not a problem: the kit does not claim a Retry-After it does not send.
    expect(headerRefs(document.paths['/things'].post.responses, '503')).toBeUndefined();
    expect(headerRefs(document.paths['/things'].post.responses, '201')).toEqual({ Location: { $ref: '#/components/headers/Location' } });
    expect(JSON.stringify(document)).not.toContain('x-response-headers');
  });

  it('states security from each route’s auth', () => {
    expect(document.paths['/things'].get.security).toEqual([{ bearerAuth: [] }]);
    expect(document.paths['/things'].post.security).toEqual([{}, { bearerAuth: [] }]);
    expect(document.paths['/things/{id}/ping'].get.security).toEqual([]);
  });

  it('keeps only the components something uses, request schemas under their plain names', () => {
    expect(Object.keys(document.components.schemas).sort()).toEqual(['Problem', 'Thing', 'ThingBody']);
    expect(document.paths['/things'].post.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ThingBody' });
    expect(Object.keys(document.components.headers).sort()).toEqual(['Content-Range', 'Link', 'Location', 'Preference-Applied', 'Retry-After']);
    expect(document.tags).toEqual([{ name: 'Thing', description: 'Things' }]);
    expect(document.servers).toEqual([{ url: '/', description: expect.any(String) }]);
  });
});

describe('the routes an app declares for the edge (EDGE_ROUTES of its own document)', () => {
  let app: App;
  let declared: { method: string; path: string; auth: unknown; bodyLimit?: number }[];

  beforeAll(async () => {
    app = await createApp({ name: 'edge-routes', version: '1.0.0', logger: createLogger({ LOG_LEVEL: 'silent' }), bodyLimit: 1024 });
    app.get('/things/:id', { config: { auth: { roles: ['editor'] } } }, async () => ({}));
    app.post('/things/form', { config: { auth: 'public' }, bodyLimit: 256, schema: { hide: true } }, async () => ({}));
    app.get('/things/start', { config: { auth: 'public' }, exposeHeadRoute: false }, async () => ({}));
    app.get('/things', async () => []);
    await app.register(async (scope) => {
      declareAuth(scope as App, 'public');
      scope.get('/open/*', async () => ({}));
    });
    declared = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()[EDGE_ROUTES];
  });
  afterAll(() => app.close());

  const find = (method: string, path: string) => declared.find((route) => route.method === method && route.path === path);

  it('lists every route with its method, template and auth as declared, `authenticated` when it declares none', () => {
    expect(find('GET', '/things/:id')).toEqual({ method: 'GET', path: '/things/:id', auth: { roles: ['editor'] } });
    expect(find('GET', '/things')).toEqual({ method: 'GET', path: '/things', auth: 'authenticated' });
  });

  it('carries a route’s own body limit, hidden routes included', () => {
    expect(find('POST', '/things/form')).toEqual({ method: 'POST', path: '/things/form', auth: 'public', bodyLimit: 256 });
  });

  it('lists a GET’s HEAD twin as its GET is declared, and none where the route has none', () => {
    expect(find('HEAD', '/things/:id')).toMatchObject({ auth: { roles: ['editor'] } });
    expect(find('GET', '/things/start')).toMatchObject({ auth: 'public' });
    expect(find('HEAD', '/things/start')).toBeUndefined();
  });

  it('takes what a scope declares for its routes (declareAuth runs after the list is collected)', () => {
    expect(find('GET', '/open/*')).toMatchObject({ auth: 'public' });
  });

  it('lists its own document for its peers, open to them', () => {
    expect(find('GET', '/openapi.json')).toMatchObject({ auth: 'public' });
  });
});
