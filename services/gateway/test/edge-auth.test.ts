// The edge's public allowlist is what the services declare: each fake service below serves its
// own document (its routes' `auth` under EDGE_ROUTES, as the kit emits it), and the gateway
// must open exactly those routes, of that service, for that method, and nothing near them.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildGateway } from '@app/gateway';
import type { App, EdgeRoute } from '@app/platform';
import { eventually, rawRequest, silentLogger, startTokenIssuer, testConfig, type TokenIssuer } from '@app/testing';
import { gatewayConfig } from '../src/config.js';
import { answerDocument, declaredDocument } from './declared-routes.js';

const open = (methods: string[], path: string, auth: EdgeRoute['auth'] = 'public'): EdgeRoute[] => methods.map((method) => ({ method, path, auth }));
const restricted = (methods: string[], path: string): EdgeRoute[] => methods.map((method) => ({ method, path, auth: 'authenticated' }));

/** What each fake service declares, as the real ones do (a GET route has its HEAD twin unless it says otherwise). */
const DECLARED: Record<string, EdgeRoute[]> = {
  health: [...open(['GET', 'HEAD'], '/api/v1/health/liveness'), ...open(['GET', 'HEAD'], '/api/v1/health/readiness')],
  identity: [
    ...open(['POST'], '/api/v1/identity', 'optional'),
    ...restricted(['GET', 'HEAD'], '/api/v1/identity'),
    ...restricted(['GET', 'HEAD', 'PUT'], '/api/v1/identity/:id'),
  ],
  sso: [
    ...['token', 'revoke', 'introspect'].flatMap((name) => open(['POST'], `/api/v1/sso/${name}`)),
    ...open(['GET', 'HEAD'], '/api/v1/sso/jwks'),
    // No HEAD twin: a start records an upstream round trip and a callback uses one up.
    ...open(['GET'], '/api/v1/sso/federation/:provider/start'),
    ...open(['GET'], '/api/v1/sso/federation/:provider/callback'),
    // A literal segment beside the parameter: it wins, in sso's router and at the edge.
    { method: 'GET', path: '/api/v1/sso/federation/admin/start', auth: { roles: ['admin'] } },
    ...open(['GET'], '/api/v1/sso/authorize'),
    ...open(['POST'], '/api/v1/sso/login'),
    ...open(['GET', 'POST'], '/api/v1/sso/logout'),
    ...restricted(['GET', 'HEAD'], '/api/v1/sso/userinfo'),
    ...restricted(['GET', 'HEAD', 'POST'], '/api/v1/sso/clients'),
    ...open(['GET', 'HEAD'], '/.well-known/openid-configuration'),
    ...open(['GET', 'HEAD'], '/.well-known/oauth-authorization-server'),
  ],
  crud: [
    ...open(['GET', 'HEAD'], '/api/v1/products/ping'),
    ...restricted(['GET', 'HEAD', 'POST'], '/api/v1/products'),
    ...restricted(['GET', 'HEAD', 'PUT', 'DELETE'], '/api/v1/products/:id'),
    // Paths of its siblings, declared open here: requests to them go to identity and sso, which decide.
    ...open(['GET', 'HEAD'], '/api/v1/identity/:id'),
    ...open(['GET'], '/api/v1/sso/userinfo'),
  ],
  // Its document cannot be read until the test says so.
  credentials: [...open(['GET', 'HEAD'], '/api/v1/credentials/open')],
};

describe('edge authentication, from the routes the services declare', () => {
  let issuer: TokenIssuer;
  const upstreams: Server[] = [];
  /** `<service> <method> <url>` of every request that reached a service (their documents aside). */
  const reached: string[] = [];
  let credentialsReadable = false;
  let gateway: App;
  let url: string;

  async function startService(name: string): Promise<string> {
    const document = declaredDocument(DECLARED[name]!);
    const server = createServer((req, res) => {
      if (name === 'credentials' && !credentialsReadable && req.url === '/openapi.json') {
        res.writeHead(503).end();
        return;
      }
      if (answerDocument(req, res, document)) return;
      reached.push(`${name} ${req.method} ${req.url}`);
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    upstreams.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    issuer = await startTokenIssuer();
    const config = testConfig({
      PLATFORM_SERVICES: 'identity,credentials,sso,crud',
      HEALTH_URL: await startService('health'),
      IDENTITY_URL: await startService('identity'),
      CREDENTIALS_URL: await startService('credentials'),
      SSO_URL: await startService('sso'),
      CRUD_URL: await startService('crud'),
      JWKS_URL: issuer.jwksUrl,
    }, [gatewayConfig]);
    gateway = await buildGateway(config, silentLogger());
    url = await gateway.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await gateway.close();
    for (const server of upstreams) await new Promise((resolve) => server.close(resolve));
    await issuer.close();
  });

  /** Sends `method target` as written (no client normalizes it) and says what came of it. */
  async function send(method: string, target: string, headers = '') {
    const before = reached.length;
    const body = method === 'POST' || method === 'PUT' ? '{}' : '';
    const reply = await rawRequest(
      url,
      `${method} ${target} HTTP/1.1\r\nHost: x\r\n${body ? `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n` : ''}${headers}Connection: close\r\n\r\n${body}`,
    );
    return { status: reply.status, text: reply.text, reached: reached.slice(before) };
  }

  it('answers a restricted route without a token with 401 and a Bearer challenge, never calling the upstream', async () => {
    const response = await fetch(`${url}/api/v1/products/6b1e1d1e-0000-4000-8000-000000000000`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api-platform"');
    expect(response.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(await response.json()).toMatchObject({ status: 401, code: 'PLATFORM_AUTH_INVALID_TOKEN' });
  });

  it('answers a malformed or untrusted token with 401', async () => {
    for (const authorization of ['Bearer not.a.token', 'Basic dXNlcjpwYXNz', `Bearer ${'a'.repeat(9_000)}`]) {
      expect((await fetch(`${url}/api/v1/products`, { headers: { authorization } })).status).toBe(401);
    }
  });

  it('forwards a request with a valid token', async () => {
    const token = await issuer.mint('6b1e1d1e-0000-4000-8000-000000000001', []);
    const response = await fetch(`${url}/api/v1/products`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(200);
    expect(reached).toContain('crud GET /api/v1/products');
  });

  it.each([
    ['health', 'GET', '/api/v1/health/liveness'],
    ['health', 'HEAD', '/api/v1/health/readiness'],
    ['crud', 'GET', '/api/v1/products/ping'],
    ['crud', 'GET', '/api/v1/products/ping/'],
    ['crud', 'GET', '/api/v1/products/ping?x=1&y=/../products'],
    ['identity', 'POST', '/api/v1/identity'],
    ['identity', 'POST', '/api/v1/identity/'],
    ['sso', 'POST', '/api/v1/sso/token'],
    ['sso', 'POST', '/api/v1/sso/token?/../clients'],
    ['sso', 'POST', '/api/v1/sso/revoke'],
    ['sso', 'POST', '/api/v1/sso/introspect'],
    ['sso', 'GET', '/api/v1/sso/jwks'],
    ['sso', 'HEAD', '/api/v1/sso/jwks'],
    ['sso', 'GET', '/.well-known/openid-configuration'],
    ['sso', 'GET', '/.well-known/oauth-authorization-server'],
    ['sso', 'GET', '/api/v1/sso/federation/google/start'],
    ['sso', 'GET', '/api/v1/sso/federation/github/callback?code=x&state=y'],
    ['sso', 'GET', '/api/v1/sso/authorize?client_id=x'],
    ['sso', 'POST', '/api/v1/sso/login'],
    ['sso', 'GET', '/api/v1/sso/logout'],
    ['sso', 'POST', '/api/v1/sso/logout'],
  ])('lets %s’s declared open route %s %s through without a token, to that service', async (service, method, target) => {
    const sent = await send(method, target);
    expect([target, sent.status]).toEqual([target, 200]);
    expect(sent.reached).toEqual([`${service} ${method} ${target}`]);
  });

  it.each([
    // Undeclared, or declared with a token.
    ['GET', '/api/v1/identity'],
    ['GET', '/api/v1/identity/6b1e1d1e-0000-4000-8000-000000000000'],
    ['POST', '/api/v1/identity/x'],
    ['GET', '/api/v1/sso/clients'],
    ['GET', '/api/v1/unknown/ping'],
    ['GET', '/api/v1/products/ping/x'],
    ['POST', '/api/v1/sso/tokens'],
    ['GET', '/api/v1/sso/federation/google/other'],
    // Another method than the one declared open; HEAD where the route has no HEAD twin.
    ['GET', '/api/v1/sso/token'],
    ['DELETE', '/api/v1/products/ping'],
    ['GET', '/api/v1/sso/login'],
    ['HEAD', '/api/v1/sso/authorize'],
    ['HEAD', '/api/v1/sso/federation/google/start'],
    ['POST', '/api/v1/sso/federation/google/callback'],
    // Open in crud's document, but the path is identity's and sso's: theirs decide.
    ['GET', '/api/v1/identity/abc'],
    ['GET', '/api/v1/sso/userinfo'],
    // Two of sso's templates match: the literal one wins, and it wants a role.
    ['GET', '/api/v1/sso/federation/admin/start'],
    // Paths a client library would normalize, sent as written.
    ['GET', '/api/v1/sso/federation/google/start/../../clients'],
    ['POST', '/api/v1/sso/token/../clients'],
    ['POST', '/api/v1/sso/token/%2e%2e/clients'],
    ['POST', '/api/v1/sso/token%2F..%2Fclients'],
    ['POST', '/api/v1/sso/%74oken'],
    ['POST', '/api/v1//sso/token'],
    ['POST', '//api/v1/sso/token'],
    ['POST', '/api/v1/sso/token//'],
    ['POST', '/API/v1/sso/token'],
    ['POST', '/api/v1/sso/Token'],
    ['POST', '/api/v1/sso/token;x'],
    ['GET', '/api/v1/products/ping%2F..%2F..%2Fproducts'],
    ['GET', '/internal/v1/identities/lookup'],
  ])('keeps %s %s restricted: 401, nothing forwarded', async (method, target) => {
    const sent = await send(method, target);
    expect([target, sent.status, sent.reached]).toEqual([target, 401, []]);
    if (method !== 'HEAD') expect(sent.text).toContain('PLATFORM_AUTH_INVALID_TOKEN');
  });

  it('answers a path no route matches with 401 without a token, so the edge does not reveal what exists', async () => {
    for (const path of ['/nowhere', '/internal/v1/identities/lookup', '/openapi.json']) {
      const response = await fetch(`${url}${path}`, { method: 'POST' });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api-platform"');
    }
    const token = await issuer.mint('6b1e1d1e-0000-4000-8000-000000000001', []);
    expect((await fetch(`${url}/nowhere`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(404);
  });

  it('serves its own probes and docs without a token, as its own routes declare', async () => {
    expect((await fetch(`${url}/health/liveness`)).status).toBe(200);
    expect((await fetch(`${url}/docs`)).status).toBe(200);
    expect((await fetch(`${url}/`, { redirect: 'manual' })).status).toBe(302);
    // Its own document is no peer's business at the edge.
    expect((await fetch(`${url}/openapi.json`)).status).toBe(401);
  });

  it('fails closed on a service whose document it cannot read yet: its routes want a token, and it is not ready, until it reads it', async () => {
    expect((await send('GET', '/api/v1/credentials/open')).status).toBe(401);
    const unready = await fetch(`${url}/health/readiness`);
    expect(unready.status).toBe(503);
    expect(((await unready.json()) as { dependencies: Record<string, { status: string }> }).dependencies.routes).toMatchObject({ status: 'disconnected' });
    credentialsReadable = true;
    expect(await eventually(async () => (await send('GET', '/api/v1/credentials/open')).status === 200)).toBe(true);
    expect(reached).toContain('credentials GET /api/v1/credentials/open');
    const report = (await (await fetch(`${url}/health/readiness`)).json()) as { dependencies: Record<string, { status: string }> };
    expect(report.dependencies.routes).toMatchObject({ status: 'connected' });
  });

  it('never reads a document through the edge: a service’s own document is not under its prefixes', async () => {
    expect(reached.some((line) => line.includes('/openapi.json'))).toBe(false);
  });
});
