import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createApp,
  forbiddenCharacterPaths,
  isInvalidTextError,
  jsonNestsDeeperThan,
  type App,
} from '@app/platform';
import { openTestDependencies, rawBody, rawHeader, rawRequest, silentLogger, testModes } from '@app/testing';
import { z } from 'zod';

describe('forbiddenCharacterPaths', () => {
  it('finds U+0000 and unpaired surrogates in values and keys, at any depth', () => {
    expect(forbiddenCharacterPaths({ a: 'ok', b: ['x', 'y\u0000'], c: { d: '\uD800' }, 'e\u0000': 1, f: 'z\uDC00' })).toEqual(
      expect.arrayContaining([['b', 1], ['c', 'd'], ['e\uFFFD'], ['f']]),
    );
    expect(forbiddenCharacterPaths('\u0000')).toEqual([[]]);
  });

  it('accepts every other character, surrogate pairs (emoji) included', () => {
    expect(forbiddenCharacterPaths({ name: 'Zoë 😀 \u0001 \uFFFF \uD83D\uDE00', list: ['\t\n'] })).toEqual([]);
  });

  it('walks parsed input only: streams and class instances are not input', () => {
    class Holder {
      value = '\u0000';
    }
    expect(forbiddenCharacterPaths(new Holder())).toEqual([]);
    expect(forbiddenCharacterPaths(Object.assign(Object.create(null) as object, { q: 'a\u0000' }))).toEqual([['q']]);
  });

  it('survives input nested deeper than any stack', () => {
    let deep: unknown = '\u0000';
    for (let level = 0; level < 200_000; level++) deep = [deep];
    expect(forbiddenCharacterPaths(deep)).toHaveLength(1);
  });
});

describe('jsonNestsDeeperThan', () => {
  const deeper = (text: string, max: number) => jsonNestsDeeperThan(Buffer.from(text), max);
  it('counts arrays and objects, not brackets inside strings', () => {
    expect(deeper('{"a":[[1]]}', 3)).toBe(false);
    expect(deeper('{"a":[[[1]]]}', 3)).toBe(true);
    expect(deeper('{"a":"[[[[[[{{{{"}', 1)).toBe(false);
    expect(deeper('{"a":"\\"[[[["}', 1)).toBe(false);
    expect(deeper('[{}, {}, [], []]', 2)).toBe(false);
  });
});

describe('isInvalidTextError', () => {
  it('knows Postgres, PGlite and Prisma shapes of 22021 and 22P05', () => {
    expect(isInvalidTextError(Object.assign(new Error('invalid byte sequence'), { code: '22021' }))).toBe(true);
    expect(isInvalidTextError({ code: 'P2039', meta: { driverAdapterError: { cause: { code: '22P05' } } } })).toBe(true);
    expect(isInvalidTextError(new Error('wrapped', { cause: { code: '22021' } }))).toBe(true);
    expect(isInvalidTextError(Object.assign(new Error('unique'), { code: '23505' }))).toBe(false);
    expect(isInvalidTextError(undefined)).toBe(false);
  });
});

describe.each(testModes())('input guards of every app (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let app: App;
  let url: string;
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    app = await createApp({
      name: 'guards',
      version: '1',
      logger: silentLogger(),
      bodyLimit: 4_096,
      limits: { maxUrlLength: 512, maxHeaderSize: 2_048, jsonMaxDepth: 8, requestTimeoutMs: 500 },
    });
    const config = { auth: 'public' } as const;
    app.post('/things', { config, schema: { body: z.object({ name: z.string(), tags: z.array(z.unknown()).optional() }) } }, async (request) => request.body);
    app.get('/things/:slug', { config, schema: { params: z.object({ slug: z.string() }), querystring: z.object({ q: z.string().optional() }) } }, async (request) => ({
      slug: request.params.slug,
    }));
    // Hands the database text no guard saw (decoded from base64 here): the second guard's case.
    app.post('/store', { config, schema: { body: z.object({ base64: z.string() }) } }, async (request) => {
      const text = Buffer.from(request.body.base64, 'base64').toString('utf8');
      return deps.database.query('select $1::text as text', [text]);
    });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await app?.close();
    await deps?.dispose();
  });

  const post = (path: string, payload: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'POST', url: path, payload, headers: { 'content-type': 'application/json', ...headers } });

  it('U+0000 in a JSON body: 400 naming the field, localized', async () => {
    const response = await post('/things', JSON.stringify({ name: 'a\u0000' }), { 'accept-language': 'pt-BR' });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({
      code: 'PLATFORM_VALIDATION_FAILED',
      errors: [{ path: 'body.name', message: 'Contém um caractere não permitido aqui (U+0000 ou um surrogate não pareado).' }],
    });
  });

  it('a forbidden character in a key, a nested value or as an unpaired surrogate: 400 naming where', async () => {
    const key = await post('/things', '{"name":"a","\\u0000x":1}');
    expect(key.statusCode).toBe(400);
    expect(key.json().errors).toEqual([{ path: 'body.\uFFFDx', message: expect.any(String) }]);
    const nested = await post('/things', JSON.stringify({ name: 'a', tags: ['ok', { deep: 'b\u0000' }] }));
    expect(nested.statusCode).toBe(400);
    expect(nested.json().errors).toEqual([{ path: 'body.tags.1.deep', message: expect.any(String) }]);
    const surrogate = await post('/things', '{"name":"\\ud800"}');
    expect(surrogate.statusCode).toBe(400);
    expect(surrogate.json().errors).toEqual([{ path: 'body.name', message: expect.any(String) }]);
    expect((await post('/things', JSON.stringify({ name: 'plain', tags: ['ok', { deep: 'fine' }] }))).statusCode).toBe(200);
  });

  it('U+0000 in a path parameter and in a query: 400 naming where', async () => {
    const path = await app.inject({ method: 'GET', url: `/things/${encodeURIComponent('a\u0000')}` });
    expect(path.statusCode).toBe(400);
    expect(path.json().errors).toEqual([{ path: 'url', message: expect.any(String) }]);
    const query = await app.inject({ method: 'GET', url: '/things/a?q=b%00c' });
    expect(query.statusCode).toBe(400);
    expect(query.json().errors).toEqual([{ path: 'url', message: expect.any(String) }]);
  });

  it('a body that is not UTF-8: 400', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/things',
      payload: Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
      headers: { 'content-type': 'application/json' },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('PLATFORM_INVALID_ENCODING');
  });

  it('JSON deeper than the bound: 400 before parsing; at the bound: parsed', async () => {
    const tooDeep = await post('/things', `{"name":"n","tags":${'['.repeat(8)}${']'.repeat(8)}}`, { 'accept-language': 'fr' });
    expect(tooDeep.statusCode).toBe(400);
    expect(tooDeep.json()).toMatchObject({ code: 'PLATFORM_JSON_TOO_DEEP', detail: 'Le corps JSON est imbriqué au-delà des 8 niveaux autorisés.' });
    const atBound = await post('/things', `{"name":"n","tags":${'['.repeat(7)}${']'.repeat(7)}}`);
    expect(atBound.statusCode).toBe(200);
  });

  it('emoji and other characters pass untouched', async () => {
    const response = await post('/things', JSON.stringify({ name: 'Zoë 😀' }));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ name: 'Zoë 😀' });
  });

  it('text the database refuses (the second guard): 400, never 500', async () => {
    const response = await post('/store', JSON.stringify({ base64: Buffer.from('a\u0000b').toString('base64') }), { 'accept-language': 'es' });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ code: 'PLATFORM_FORBIDDEN_CHARACTER', detail: expect.stringContaining('U+0000') });
    const fine = await post('/store', JSON.stringify({ base64: Buffer.from('ab').toString('base64') }));
    expect(fine.json()).toEqual([{ text: 'ab' }]);
  });

  it('a URL over the limit: 414', async () => {
    const response = await app.inject({ method: 'GET', url: `/things/a?q=${'x'.repeat(600)}` });
    expect(response.statusCode).toBe(414);
    expect(response.json()).toMatchObject({ code: 'PLATFORM_URI_TOO_LONG', detail: 'The URL is longer than the 512 characters allowed.' });
  });

  it('headers over the limit: 431 in the language asked, connection closed', async () => {
    const reply = await rawRequest(url, `GET /things/a HTTP/1.1\r\nHost: x\r\nAccept-Language: de\r\nX-Pad: ${'p'.repeat(3_000)}\r\n\r\n`);
    expect(reply.status).toBe(431);
    expect(reply.closed).toBe(true);
    expect(rawHeader(reply, 'content-language')).toBe('de');
    expect(rawBody(reply)).toMatchObject({ status: 431, code: 'PLATFORM_HEADERS_TOO_LARGE', title: 'Header-Felder zu groß' });
  });

  it('a request line longer than the header limit: 414, connection closed', async () => {
    const reply = await rawRequest(url, `GET /things/a?q=${'x'.repeat(3_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(reply.status).toBe(414);
    expect(reply.closed).toBe(true);
  });

  it('a request that never finishes arriving: 408 and closed after the request timeout', async () => {
    const reply = await rawRequest(url, 'POST /things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"na');
    expect(reply.status).toBe(408);
    expect(reply.closed).toBe(true);
  });

  it('a body over the limit: 413 at once, connection closed', async () => {
    const body = JSON.stringify({ name: 'x'.repeat(10_000) });
    const reply = await rawRequest(url, `POST /things HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    expect(reply.status).toBe(413);
    expect(reply.closed).toBe(true);
  });
});
