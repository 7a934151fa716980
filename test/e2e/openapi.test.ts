// The merged OpenAPI document at /docs/json, as a client generator or the docs UI reads it,
// in the all-in-one and in split mode (the gateway merging each service's own document), on the
// embedded default and on the real servers: identified operations, one problem schema, the
// headers the platform sends, examples the API accepts, and answers that match what it says.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EDGE_ROUTES } from '@app/platform';
import { readJson, type Json } from '@app/testing';
import { bootstrapAdmin, DEPLOYMENTS, type Running } from '../support/deployments.js';
import { checkExamples, operationsOf, resolveRef, schemaValidator, type OpenApi } from '../support/openapi.js';

const admin = bootstrapAdmin();

/** The OAuth 2 protocol endpoints: their errors are RFC 6749 §5.2 JSON, not problem documents. */
const OAUTH_ENDPOINTS = ['/api/v1/sso/token', '/api/v1/sso/revoke', '/api/v1/sso/introspect'];
/** A browser's pages (sign-in through Google or GitHub): their errors are HTML pages a person reads, not problems. */
const isBrowserPage = (path: string) => path.startsWith('/api/v1/sso/federation/');
/** The readiness report answers its 503 with the report itself (DESIGN "Health"), not a problem. */
const REPORTS = [['/api/v1/health/readiness', '503']];
/** Headers an answer carries only when asked (`Prefer: count=exact`) or when there is another page. */
const CONDITIONAL_HEADERS = ['Link', 'Content-Range', 'Preference-Applied'];

const documents = new Map<string, OpenApi>();

const mediaType = (contentType: string | null) => contentType?.split(';')[0]!.trim();

describe.each(DEPLOYMENTS)('the OpenAPI document ($name)', (deployment) => {
  let running: Running;
  let document: OpenApi;
  let adminToken: string;

  beforeAll(async () => {
    running = await deployment.start(admin.env);
    document = (await readJson(await fetch(`${running.url}/docs/json`))) as OpenApi;
    documents.set(deployment.name, document);
    adminToken = await admin.signIn(running.url);
  });
  afterAll(async () => {
    await running?.close();
  });

  it('lists every service and no catch-all or proxy route', () => {
    expect(document['x-unavailable-services']).toBeUndefined();
    // The routes' declarations for the edge stay in each service's own document.
    expect(document[EDGE_ROUTES]).toBeUndefined();
    const paths = Object.keys(document.paths);
    expect(paths).toEqual(expect.arrayContaining(['/api/v1/products', '/api/v1/identity', '/api/v1/credentials', '/api/v1/sso/token', '/api/v1/health/readiness']));
    for (const path of paths) {
      expect(path).not.toMatch(/[*]|\{\*\}|\{wildcard\}/);
      expect(path).toMatch(/^\/(api\/v1|\.well-known)\//);
    }
  });

  it('gives every operation a unique camelCase operationId, the generic domains theirs from the domain name', () => {
    const ids = operationsOf(document).map(({ operation }) => operation.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][a-zA-Z0-9]*$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(
      expect.arrayContaining(['listProducts', 'getProduct', 'createProduct', 'updateProduct', 'deleteProduct', 'listPosts', 'getIdentity', 'listIdentities', 'issueToken', 'getReadiness']),
    );
    expect(document.paths['/api/v1/products/{id}'].get.operationId).toBe('getProduct');
  });

  it('types every error as application/problem+json with the one Problem schema, but the OAuth endpoints’ RFC 6749 errors', () => {
    const problem = document.components.schemas.Problem;
    expect(problem.required).toEqual(expect.arrayContaining(['type', 'title', 'status', 'detail', 'instance', 'code']));
    expect(Object.keys(problem.properties)).toEqual(expect.arrayContaining(['errors', 'requestId']));
    expect(document.components.schemas.OAuthError.required).toEqual(expect.arrayContaining(['error']));
    expect(Object.keys(document.components.schemas.OAuthError.properties)).toEqual(['error', 'error_description']);
    let errors = 0;
    for (const { path, operation } of operationsOf(document)) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, OpenApi>)) {
        if (Number(status) < 400 || REPORTS.some(([p, s]) => p === path && s === status)) continue;
        errors++;
        const expected = OAUTH_ENDPOINTS.includes(path)
          ? { 'application/json': { schema: { $ref: '#/components/schemas/OAuthError' } } }
          : isBrowserPage(path)
            ? { 'text/html': { schema: { type: 'string' } } }
            : { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };
        expect([path, status, response.content]).toEqual([path, status, expected]);
        expect(response.description).not.toBe('Default Response');
      }
    }
    expect(errors).toBeGreaterThan(100);
  });

  it('documents the headers the platform sends, each from components.headers', () => {
    const headersOf = (path: string, method: string, status: string) => Object.keys(document.paths[path][method].responses[status].headers ?? {});
    for (const path of ['/api/v1/products', '/api/v1/posts', '/api/v1/identity', '/api/v1/credentials']) {
      expect(headersOf(path, 'get', '200')).toEqual(expect.arrayContaining(['Link', 'Content-Range']));
    }
    expect(headersOf('/api/v1/identity', 'post', '201')).toEqual(expect.arrayContaining(['RateLimit', 'RateLimit-Policy']));
    expect(headersOf('/api/v1/identity', 'post', '429')).toEqual(expect.arrayContaining(['Retry-After', 'RateLimit', 'RateLimit-Policy']));
    expect(headersOf('/api/v1/sso/token', 'post', '429')).toContain('Retry-After');
    let throttled = 0;
    for (const { path, method, operation } of operationsOf(document)) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, OpenApi>)) {
        if ((status === '429' || status === '503') && !REPORTS.some(([p, s]) => p === path && s === status)) {
          throttled++;
          expect([path, method, status, Object.keys(response.headers ?? {})]).toEqual([path, method, status, expect.arrayContaining(['Retry-After'])]);
        }
        for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, OpenApi>)) {
          expect(header).toEqual({ $ref: `#/components/headers/${name}` });
          expect(resolveRef(document, header.$ref)).toMatchObject({ description: expect.any(String), schema: expect.any(Object) });
        }
      }
    }
    expect(throttled).toBeGreaterThan(5);
  });

  it('documents Idempotency-Key, with its 409 and 422, on every create', () => {
    // Every POST that creates a record; a key rotation answers 201 too, but a retried one only rotates again.
    const creates = operationsOf(document).filter(({ path, method, operation }) => method === 'post' && operation.responses['201'] && path !== '/api/v1/sso/keys/rotate');
    expect(creates.map(({ operation }) => operation.operationId)).toEqual(
      expect.arrayContaining(['createProduct', 'createPost', 'createIdentity', 'createCredential', 'createOAuthClient']),
    );
    for (const { path, operation } of creates) {
      const header = ((operation.parameters ?? []) as OpenApi[]).find((parameter) => parameter.in === 'header' && parameter.name === 'idempotency-key');
      expect([path, header?.schema]).toEqual([path, expect.objectContaining({ type: 'string', pattern: expect.any(String) })]);
      expect([path, Object.keys(operation.responses)]).toEqual([path, expect.arrayContaining(['409', '422'])]);
      expect(operation.responses['409'].description).toMatch(/Idempotency-Key/);
    }
  });

  it('offers only examples and defaults that satisfy their schemas', () => {
    const checks = checkExamples(document);
    expect(checks.filter((check) => check.error)).toEqual([]);
    const where = checks.map((check) => check.where);
    // What the docs UI pre-fills for a new product: the bug was a price over the column's maximum.
    expect(where).toContain('components.schemas.ProductCreate.examples[0]');
    // What it pre-fills for signing up: no roles (only an admin may set them).
    expect(where).toContain('components.schemas.IdentityCreate.examples[0]');
    expect(where).toContain('components.headers.Retry-After.example');
    expect(checks.length).toBeGreaterThan(50);
  });

  it('answers every operation as it documents it: a documented status, media type, body and headers', async () => {
    const validate = schemaValidator(document);
    const checked: string[] = [];
    for (const as of ['anonymous', 'admin'] as const) {
      for (const { method, path, operation } of operationsOf(document)) {
        // Rotating the signing key is not what this test is about.
        if (operation.operationId === 'rotateSigningKey' && as === 'admin') continue;
        const url = path.replace(/\{(\w+)\}/g, (_match, name: string) => (name === 'email' ? 'nobody%40example.com' : randomUUID()));
        const media = operation.requestBody?.content?.['application/json'];
        const example = media && (media.schema.$ref ? resolveRef(document, media.schema.$ref) : media.schema).examples?.[0];
        const response = await fetch(`${running.url}${url}`, {
          method: method.toUpperCase(),
          headers: {
            ...(as === 'admin' ? { authorization: `Bearer ${adminToken}` } : {}),
            ...(media ? { 'content-type': 'application/json' } : {}),
            ...(operation.parameters?.some((p: OpenApi) => p.name === 'prefer') ? { prefer: 'count=exact' } : {}),
          },
          body: media ? JSON.stringify(example ?? {}) : undefined,
        });
        const status = String(response.status);
        const documented = operation.responses[status];
        const where = `${as} ${method.toUpperCase()} ${path} -> ${status}`;
        expect([where, documented !== undefined]).toEqual([where, true]);
        const text = await response.text();
        if (text) {
          const content = documented.content?.[mediaType(response.headers.get('content-type'))!];
          expect([where, response.headers.get('content-type'), content !== undefined]).toEqual([where, response.headers.get('content-type'), true]);
          // The browser sign-in's pages are HTML (their schema a string); everything else is JSON.
          const body: unknown = mediaType(response.headers.get('content-type')) === 'text/html' ? text : JSON.parse(text);
          expect([where, validate(content.schema, body)]).toEqual([where, undefined]);
        }
        for (const name of Object.keys(documented.headers ?? {})) {
          if (CONDITIONAL_HEADERS.includes(name) && !(name === 'Content-Range' && response.headers.has('preference-applied'))) continue;
          expect([where, name, response.headers.has(name)]).toEqual([where, name, true]);
        }
        // An example the document offers is never refused as bad input.
        if (example !== undefined && as === 'admin') {
          const refusal = JSON.parse(text || '{}') as Json;
          expect([where, refusal.code]).not.toEqual([where, 'PLATFORM_VALIDATION_FAILED']);
          expect([where, refusal.error]).not.toEqual([where, 'invalid_request']);
        }
        checked.push(where);
      }
    }
    // Lists answered the total they were asked for, as documented.
    expect(checked).toContain('admin GET /api/v1/products -> 200');
    expect(checked).toContain('admin POST /api/v1/products -> 201');
    expect(checked).toContain('anonymous GET /api/v1/products -> 401');
    // The documented sign-up is one anyone may make (it once pre-filled roles: a 403).
    expect(checked).toContain('anonymous POST /api/v1/identity -> 201');
  });

  it('lets an anonymous caller past the edge exactly on the operations it documents as needing no token', async () => {
    const refusedAtEdge: string[] = [];
    const open: string[] = [];
    for (const { method, path, operation } of operationsOf(document)) {
      const url = path.replace(/\{(\w+)\}/g, () => randomUUID());
      const response = await fetch(`${running.url}${url}`, { method: method.toUpperCase(), ...(operation.requestBody ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}) });
      const text = await response.text();
      const where = `${method.toUpperCase()} ${path}`;
      // The edge's refusal: the platform's 401 problem, whatever the route behind would answer.
      if (response.status === 401 && text.includes('"PLATFORM_AUTH_INVALID_TOKEN"')) refusedAtEdge.push(where);
      // No requirement (route-auth's `public`), or an empty one among them (`optional`): no token needed.
      const security = operation.security as object[];
      if (security.length === 0 || security.some((requirement) => Object.keys(requirement).length === 0)) open.push(where);
    }
    const all = operationsOf(document).map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(refusedAtEdge.sort()).toEqual(all.filter((where) => !open.includes(where)).sort());
    expect(open).toEqual(expect.arrayContaining(['POST /api/v1/identity', 'POST /api/v1/sso/token', 'GET /api/v1/sso/jwks', 'GET /api/v1/products/ping']));
  });

  it('documents the OAuth endpoints’ 413 for a body over their limit, in the RFC 6749 shape it has', async () => {
    const validate = schemaValidator(document);
    for (const path of ['/api/v1/sso/token', '/api/v1/sso/revoke']) {
      const response = await fetch(`${running.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `grant_type=password&username=${'a'.repeat(20_000)}`,
      });
      expect([path, response.status]).toEqual([path, 413]);
      const documented = document.paths[path].post.responses['413'];
      expect([path, validate(documented.content['application/json'].schema, await response.json())]).toEqual([path, undefined]);
    }
  });

  it('redirects / to the docs, without a token', async () => {
    for (const method of ['GET', 'HEAD']) {
      const response = await fetch(`${running.url}/`, { method, redirect: 'manual' });
      expect(response.status).toBe(302);
      expect(response.headers.get('location')).toBe('/docs');
    }
    const followed = await fetch(`${running.url}/`);
    expect(followed.status).toBe(200);
    expect(await followed.text()).toContain('swagger-ui');
  });
});

describe('the OpenAPI document in either mode', () => {
  it.each(DEPLOYMENTS.filter((deployment) => deployment.name.startsWith('split')))('is the same document in the all-in-one and in $name', (split) => {
    const allInOne = documents.get(`all-in-one, ${split.mode}`);
    expect(allInOne).toBeDefined();
    expect(documents.get(split.name)).toEqual(allInOne);
  });
});

describe('the example check', () => {
  it('finds an example its schema refuses, as the product price the docs UI once made up', () => {
    const document = {
      paths: {},
      components: {
        schemas: {
          Product: {
            type: 'object',
            properties: { price: { type: 'number', minimum: 0, maximum: 99999999.99, multipleOf: 0.01 } },
            examples: [{ price: 99999999.99000001 }, { price: 9.99 }],
          },
        },
        headers: { 'Retry-After': { schema: { type: 'integer', minimum: 1 }, example: 0 } },
      },
    };
    expect(checkExamples(document).map((check) => [check.where, check.error !== undefined])).toEqual([
      ['components.schemas.Product.examples[0]', true],
      ['components.schemas.Product.examples[1]', false],
      ['components.headers.Retry-After.example', true],
    ]);
  });
});
