import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AppError, createApp, createLogger, defineMessages, issueKey, problemSchema, type App } from '@app/platform';
import { z } from 'zod';

defineMessages({
  en: { 'test.slugTaken': 'The slug "{slug}" is taken.', 'test.evenOnly': 'Must be even.' },
  'pt-BR': { 'test.slugTaken': 'O slug "{slug}" já está em uso.', 'test.evenOnly': 'Deve ser par.' },
  es: { 'test.slugTaken': 'El slug "{slug}" ya está en uso.', 'test.evenOnly': 'Debe ser par.' },
  fr: { 'test.slugTaken': 'Le slug « {slug} » est déjà pris.', 'test.evenOnly': 'Doit être pair.' },
  de: { 'test.slugTaken': 'Der Slug „{slug}“ ist vergeben.', 'test.evenOnly': 'Muss gerade sein.' },
});

const logLines: string[] = [];
const capture = new Writable({
  write(chunk, _encoding, callback) {
    logLines.push(String(chunk));
    callback();
  },
});

let app: App;
let baseUrl: string;

beforeAll(async () => {
  app = await createApp({ name: 'test', version: '1.0.0', logger: createLogger({ LOG_LEVEL: 'info' }, capture), bodyLimit: 1024 });
  // Public: these tests are about errors and parsing; route-auth.test.ts covers who may call.
  const config = { auth: 'public' } as const;
  app.post(
    '/things',
    {
      config,
      schema: {
        body: z.strictObject({ name: z.string().min(3), count: z.number().int().refine((n) => n % 2 === 0, issueKey('test.evenOnly')) }),
        response: { 201: z.object({ name: z.string() }), 400: problemSchema },
      },
    },
    async (request, reply) => reply.code(201).send({ name: request.body.name }),
  );
  app.get('/things/:id', { config, schema: { params: z.object({ id: z.uuid() }) } }, async () => {
    throw new AppError('TEST_SLUG_TAKEN', 422, 'test.slugTaken', { slug: 'hello' });
  });
  app.get('/boom', { config }, async () => {
    throw new Error('select * from secrets where password = hunter2');
  });
  // A loose headers schema, as the list routes declare (Prefer), and one with a default.
  app.get(
    '/headers',
    { config, schema: { headers: z.looseObject({ prefer: z.string().max(20).optional() }) } },
    async (request) => ({ own: request.headers === request.raw.headers, prefer: request.headers.prefer ?? null, agent: request.headers['user-agent'] ?? null }),
  );
  app.get(
    '/headers/defaulted',
    { config, schema: { headers: z.looseObject({ 'x-mode': z.enum(['a', 'b']).default('a') }) } },
    async (request) => ({ mode: request.headers['x-mode'], agent: request.headers['user-agent'] ?? null }),
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});

afterAll(async () => {
  await app.close();
});

describe('problem+json errors', () => {
  it('answers 400 with one localized entry per invalid field', async () => {
    const response = await app.inject({ method: 'POST', url: '/things', payload: { name: 'ab', count: 3 } });
    expect(response.statusCode).toBe(400);
    expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(response.json()).toEqual({
      type: 'urn:problem:platform-validation-failed',
      title: 'Bad Request',
      status: 400,
      detail: 'The request is invalid; see "errors" for each problem.',
      instance: '/things',
      code: 'PLATFORM_VALIDATION_FAILED',
      requestId: response.headers['x-request-id'],
      errors: [
        { path: 'body.name', message: 'Too small: expected string to have >=3 characters' },
        { path: 'body.count', message: 'Must be even.' },
      ],
    });
  });

  it('words the same problem in Brazilian Portuguese, with zod own locale', async () => {
    const response = await app.inject({
      method: 'POST',
      url: '/things',
      payload: { name: 'ab', count: 3 },
      headers: { 'accept-language': 'pt-BR,pt;q=0.9,en;q=0.5' },
    });
    const body = response.json();
    expect(response.headers['content-language']).toBe('pt-BR');
    expect(body.title).toBe('Requisição inválida');
    expect(body.errors).toEqual([
      { path: 'body.name', message: expect.stringContaining('3') },
      { path: 'body.count', message: 'Deve ser par.' },
    ]);
    expect(body.errors[0].message).not.toBe('Too small: expected string to have >=3 characters');
  });

  it.each([
    ['es', 'Solicitud incorrecta'],
    ['fr-CA', 'Requête incorrecte'],
    ['de-AT;q=0.8, xx', 'Ungültige Anfrage'],
    ['ja', 'Bad Request'],
  ])('picks the title for Accept-Language %s', async (language, title) => {
    const response = await app.inject({ method: 'POST', url: '/things', payload: {}, headers: { 'accept-language': language } });
    expect(response.json().title).toBe(title);
  });

  it('rejects unknown body fields', async () => {
    const response = await app.inject({ method: 'POST', url: '/things', payload: { name: 'abc', count: 2, admin: true } });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors).toEqual([{ path: 'body', message: 'Unrecognized key: "admin"' }]);
  });

  it('answers a service error with its code, status and localized detail', async () => {
    const response = await app.inject({
      method: 'GET',
      url: '/things/7d3c4a8e-1b2f-4c5d-9e6f-0a1b2c3d4e5f',
      headers: { 'accept-language': 'fr' },
    });
    expect(response.statusCode).toBe(422);
    expect(response.json()).toMatchObject({ code: 'TEST_SLUG_TAKEN', title: 'Contenu impossible à traiter', detail: 'Le slug « hello » est déjà pris.' });
  });

  it('answers 400 for an invalid path parameter', async () => {
    const response = await app.inject({ method: 'GET', url: '/things/not-a-uuid' });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors[0].path).toBe('params.id');
  });

  it('hides the cause of a 500 and logs it', async () => {
    const response = await app.inject({ method: 'GET', url: '/boom', headers: { 'x-request-id': 'trace-500' } });
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('hunter2');
    expect(response.body).not.toContain('select');
    expect(response.json()).toMatchObject({ code: 'PLATFORM_INTERNAL', detail: expect.stringContaining('trace-500') });
    expect(logLines.some((line) => line.includes('"requestId":"trace-500"') || line.includes('"reqId":"trace-500"'))).toBe(true);
  });

  it('answers unknown routes with 404 problem+json', async () => {
    const response = await app.inject({ method: 'DELETE', url: '/nowhere?x=1' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'PLATFORM_ROUTE_NOT_FOUND', detail: 'No route matches DELETE /nowhere.', instance: '/nowhere' });
  });
});

describe('bad input never reaches a handler', () => {
  it.each([
    ['malformed JSON', { 'content-type': 'application/json' }, '{"name": ', 400, 'PLATFORM_INVALID_JSON'],
    ['an empty JSON body', { 'content-type': 'application/json' }, '', 400, 'PLATFORM_EMPTY_BODY'],
    ['a wrong content type', { 'content-type': 'text/xml' }, '<a/>', 415, 'PLATFORM_UNSUPPORTED_MEDIA_TYPE'],
    ['a body over the limit', { 'content-type': 'application/json' }, JSON.stringify({ name: 'x'.repeat(2_000), count: 2 }), 413, 'PLATFORM_BODY_TOO_LARGE'],
    ['a __proto__ key', { 'content-type': 'application/json' }, '{"name":"abc","count":2,"__proto__":{"admin":true}}', 400, 'PLATFORM_INVALID_JSON'],
  ])('answers %s with a 4xx problem', async (_case, headers, payload, status, code) => {
    const response = await app.inject({ method: 'POST', url: '/things', headers, payload });
    expect(response.statusCode).toBe(status);
    expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(response.json().code).toBe(code);
  });

  it('answers a malformed percent-encoding in the URL with 400', async () => {
    const response = await app.inject({ method: 'GET', url: '/things/%E0%A4%A' });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('PLATFORM_BAD_URL');
  });

  it('answers oversized headers with 431 problem+json over a real connection', async () => {
    const { status, body, type } = await new Promise<{ status: number; body: string; type: string }>((resolve, reject) => {
      const req = httpRequest(`${baseUrl}/things`, { headers: { 'x-big': 'x'.repeat(20_000) } }, (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, type: String(res.headers['content-type']) }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(431);
    expect(type).toBe('application/problem+json; charset=utf-8');
    expect(JSON.parse(body)).toMatchObject({ status: 431, code: 'PLATFORM_HEADERS_TOO_LARGE' });
  });
});

describe('headers schemas', () => {
  it('checks the headers a loose schema names and leaves request.headers as Node parsed them', async () => {
    const response = await app.inject({ method: 'GET', url: '/headers', headers: { prefer: 'count=exact', 'user-agent': 'test/1' } });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ own: true, prefer: 'count=exact', agent: 'test/1' });
  });

  it('answers 400 naming the header that breaks its schema', async () => {
    const response = await app.inject({ method: 'GET', url: '/headers', headers: { prefer: 'x'.repeat(21) } });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors).toEqual([expect.objectContaining({ path: 'headers.prefer' })]);
  });

  it('hands the handler a default the schema gives, with every other header kept', async () => {
    const defaulted = await app.inject({ method: 'GET', url: '/headers/defaulted', headers: { 'user-agent': 'test/1' } });
    expect(defaulted.json()).toEqual({ mode: 'a', agent: 'test/1' });
    const given = await app.inject({ method: 'GET', url: '/headers/defaulted', headers: { 'x-mode': 'b' } });
    expect(given.json()).toMatchObject({ mode: 'b' });
    const bad = await app.inject({ method: 'GET', url: '/headers/defaulted', headers: { 'x-mode': 'c' } });
    expect(bad.statusCode).toBe(400);
  });
});

describe('request ids', () => {
  it('echoes a well-formed x-request-id', async () => {
    const response = await app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'abc-123' } });
    expect(response.headers['x-request-id']).toBe('abc-123');
    expect(response.json().requestId).toBe('abc-123');
  });

  it('replaces a malformed one with a generated UUID', async () => {
    const response = await app.inject({ method: 'GET', url: '/nowhere', headers: { 'x-request-id': 'bad id\twith spaces' } });
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('OpenAPI', () => {
  it('serves the service document with its routes', async () => {
    const response = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toMatchObject({ openapi: '3.1.0', info: { title: 'test', version: '1.0.0' } });
    expect(Object.keys(response.json().paths)).toEqual(expect.arrayContaining(['/things', '/things/{id}']));
  });
});
