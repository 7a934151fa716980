import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildGateway, mergeDocuments } from '@app/gateway';
import { healthService } from '@app/health';
import { buildServiceApp, type App } from '@app/platform';
import { freePort, openTestDependencies, silentLogger, startTokenIssuer, testConfig, type TokenIssuer } from '@app/testing';
import { declaredDocument, rawDocumentAnswer, SSO_TOKEN_ROUTE } from './declared-routes.js';
import { gatewayConfig } from '../src/config.js';

/** An upstream answer above the size the edge reads whole: it streams through. */
const LARGE = 'x'.repeat(200 * 1024);

describe('gateway', () => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let health: App;
  let gateway: App;
  let silent: Server;
  const held: Socket[] = [];
  let gatewayUrl: string;
  const seenIds: string[] = [];
  let issuer: TokenIssuer;
  /** Restricted routes need a token at the edge; these tests are about what happens after it. */
  let auth: Record<string, string>;

  beforeAll(async () => {
    deps = await openTestDependencies('embedded');
    issuer = await startTokenIssuer();
    auth = { authorization: `Bearer ${await issuer.mint('service:test', ['system'])}` };
    // A health service reporting on no other service: these tests are about the proxy.
    health = await buildServiceApp(healthService, { ...deps, config: { ...deps.config, PLATFORM_SERVICES: [] } });
    health.addHook('onRequest', async (request) => void seenIds.push(String(request.id)));
    const healthUrl = await health.listen({ host: '127.0.0.1', port: 0 });
    // An upstream that accepts connections and never answers, except on the few paths below
    // and its own document, which declares the token endpoint open as sso does.
    silent = createServer((socket) => {
      held.push(socket);
      socket.on('data', (head) => {
        const path = head.toString('latin1').split(' ')[1];
        if (path === '/openapi.json') socket.write(rawDocumentAnswer(declaredDocument([SSO_TOKEN_ROUTE], [SSO_TOKEN_ROUTE])));
        const answer = (headers: string, body: string, then?: () => void) => socket.write(`HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n${headers}\r\n${body}`, then);
        // Headers that promise 100 bytes, then 10 (sent) and a reset.
        if (path === '/api/v1/sso/broken-body') answer('content-length: 100\r\n', '{"partial"', () => socket.destroy());
        if (path === '/api/v1/sso/large-body') answer(`content-length: ${LARGE.length}\r\n`, LARGE);
        if (path === '/api/v1/sso/chunked-body') answer('transfer-encoding: chunked\r\n', '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n');
      });
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as { port: number }).port;
    // crud (under /api/v1) is down; sso accepts connections and never answers.
    const config = testConfig({
      PLATFORM_SERVICES: 'crud,sso',
      HEALTH_URL: healthUrl,
      CRUD_URL: `http://127.0.0.1:${await freePort()}`,
      SSO_URL: `http://127.0.0.1:${silentPort}`,
      UPSTREAM_TIMEOUT_MS: '300',
      BODY_LIMIT: '2048',
      JWKS_URL: issuer.jwksUrl,
    }, [gatewayConfig]);
    gateway = await buildGateway(config, silentLogger());
    gatewayUrl = await gateway.listen({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await gateway.close();
    await health.close();
    for (const socket of held) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    await deps.dispose();
    await issuer.close();
  });

  it('routes /api/v1/health to the health service, path unchanged', async () => {
    const response = await fetch(`${gatewayUrl}/api/v1/health/liveness`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'active', version: '1.22.0', date: expect.any(String) });
  });

  it('forwards the request id to the upstream and echoes it', async () => {
    const response = await fetch(`${gatewayUrl}/api/v1/health/liveness`, { headers: { 'x-request-id': 'edge-42' } });
    expect(response.headers.get('x-request-id')).toBe('edge-42');
    expect(seenIds).toContain('edge-42');
  });

  it('generates a request id when the caller sends none, and the upstream sees the same', async () => {
    const response = await fetch(`${gatewayUrl}/api/v1/health/liveness`);
    const id = response.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(seenIds).toContain(id);
  });

  it('answers 503 problem+json with Retry-After when the upstream is down', async () => {
    const response = await fetch(`${gatewayUrl}/api/v1/products`, { headers: { 'accept-language': 'de', ...auth } });
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.json()).toMatchObject({
      status: 503,
      code: 'GATEWAY_UPSTREAM_UNAVAILABLE',
      title: 'Dienst nicht verfügbar',
      detail: 'Der Dienst crud ist nicht verfügbar; versuchen Sie es gleich erneut.',
      instance: '/api/v1/products',
    });
  });

  it('answers 502 problem+json when the upstream does not answer in time', async () => {
    const response = await fetch(`${gatewayUrl}/api/v1/sso/token`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(502);
    expect(await response.json()).toMatchObject({ code: 'GATEWAY_UPSTREAM_TIMEOUT', detail: 'The sso service did not answer in time; retry shortly.' });
  });

  it('answers 502 problem+json, never a truncated 200, when an upstream body breaks off', async () => {
    const response = await fetch(`${gatewayUrl}/api/v1/sso/broken-body`, { headers: auth });
    expect(response.status).toBe(502);
    expect(response.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(await response.json()).toMatchObject({ status: 502, code: 'GATEWAY_UPSTREAM_BAD_RESPONSE' });
  });

  it('passes large bodies and bodies of unknown length through whole', async () => {
    const large = await fetch(`${gatewayUrl}/api/v1/sso/large-body`, { headers: auth });
    expect(large.status).toBe(200);
    expect(large.headers.get('content-length')).toBe(String(LARGE.length));
    expect(await large.text()).toBe(LARGE);
    const chunked = await fetch(`${gatewayUrl}/api/v1/sso/chunked-body`, { headers: auth });
    expect(chunked.status).toBe(200);
    expect(await chunked.text()).toBe('hello world');
  });

  it('answers routes it does not know with 404 problem+json, without calling anyone', async () => {
    const response = await fetch(`${gatewayUrl}/internal/v1/credentials/verify-password`, { method: 'POST', headers: auth });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'PLATFORM_ROUTE_NOT_FOUND' });
  });

  it('routes by the registry: the longest prefix wins, so /api/v1/sso goes to sso and not to crud under /api/v1', async () => {
    const crud = await fetch(`${gatewayUrl}/api/v1/sso-like`, { headers: auth });
    expect(await crud.json()).toMatchObject({ code: 'GATEWAY_UPSTREAM_UNAVAILABLE', detail: expect.stringContaining('crud') });
    const sso = await fetch(`${gatewayUrl}/api/v1/sso/userinfo`, { headers: auth });
    expect(await sso.json()).toMatchObject({ code: 'GATEWAY_UPSTREAM_TIMEOUT', detail: expect.stringContaining('sso') });
  });

  it('refuses a body over the limit at the edge with 413', async () => {
    const response = await fetch(`${gatewayUrl}/api/v1/products`, {
      method: 'POST',
      body: JSON.stringify({ name: 'x'.repeat(5_000) }),
      headers: { 'content-type': 'application/json', ...auth },
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ code: 'PLATFORM_BODY_TOO_LARGE' });
  });

  it('refuses a body over the limit on a public route with 413, without calling the upstream', async () => {
    // sso never answers: a proxied request would end in 502 after the timeout instead.
    const response = await fetch(`${gatewayUrl}/api/v1/sso/token`, {
      method: 'POST',
      body: JSON.stringify({ grant_type: 'x'.repeat(5_000) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(413);
    // The token endpoint's own shape (RFC 6749 §5.2), as sso answers it in the all-in-one.
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.json()).toEqual({ error: 'invalid_request', error_description: 'The request body is too large.' });
  });

  it('checks the token before the size: an oversized body without a token on a restricted route is 401', async () => {
    const response = await fetch(`${gatewayUrl}/api/v1/products`, {
      method: 'POST',
      body: JSON.stringify({ name: 'x'.repeat(5_000) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'PLATFORM_AUTH_INVALID_TOKEN' });
  });

  it('serves the interactive docs at /docs', async () => {
    const response = await fetch(`${gatewayUrl}/docs`);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('swagger-ui');
  });

  it('serves one OpenAPI 3.1 document merged from the upstreams, naming the ones that did not answer', async () => {
    const response = await fetch(`${gatewayUrl}/docs/json`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as {
      openapi: string;
      info: object;
      paths: Record<string, Record<string, object>>;
      'x-unavailable-services'?: string[];
    };
    expect(document.openapi).toBe('3.1.0');
    expect(document.info).toMatchObject({ title: 'API platform', version: '1.22.0' });
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(['/api/v1/health/liveness', '/api/v1/health/readiness']));
    expect(document.paths['/api/v1/health/readiness']?.get).toMatchObject({ tags: ['Health'], summary: expect.any(String) });
    // sso answers nothing but its own document; crud is down.
    expect(document['x-unavailable-services']).toEqual(['crud']);
  });
});

describe('mergeDocuments', () => {
  it('unions paths, tags (sorted by name) and components, keeping the base on a name clash', () => {
    const merged = mergeDocuments({ openapi: '3.1.0', paths: {}, components: { schemas: { Problem: { a: 1 } } } }, [
      { service: 'one', document: { paths: { '/a': { get: { tags: ['C'] } } }, tags: [{ name: 'A' }], components: { schemas: { Problem: { a: 2 }, Thing: {} } } } },
      { service: 'two', document: { paths: { '/b': {} }, tags: [{ name: 'A' }, { name: 'B' }] } },
      { service: 'three' },
    ]);
    expect(merged.paths).toEqual({ '/a': { get: { tags: ['C'] } }, '/b': {} });
    expect(merged.tags).toEqual([{ name: 'A' }, { name: 'B' }, { name: 'C' }]);
    expect(merged.components).toEqual({ schemas: { Problem: { a: 1 }, Thing: {} } });
    expect(merged['x-unavailable-services']).toEqual(['three']);
  });
});
