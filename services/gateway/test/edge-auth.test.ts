import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { isPublicRequest } from '@app/contracts';
import { buildGateway } from '@app/gateway';
import type { App } from '@app/platform';
import { silentLogger, startTokenIssuer, testConfig, type TokenIssuer } from '@app/testing';
import { gatewayConfig } from '../src/config.js';

describe('edge authentication', () => {
  let issuer: TokenIssuer;
  let upstream: Server;
  const reached: string[] = [];
  let gateway: App;
  let url: string;

  beforeAll(async () => {
    issuer = await startTokenIssuer();
    upstream = createServer((req, res) => {
      reached.push(`${req.method} ${req.url}`);
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    // Every service the routing table knows answers from the one recording upstream.
    const config = testConfig({
      PLATFORM_SERVICES: 'identity,sso,crud',
      HEALTH_URL: upstreamUrl,
      IDENTITY_URL: upstreamUrl,
      SSO_URL: upstreamUrl,
      CRUD_URL: upstreamUrl,
      JWKS_URL: issuer.jwksUrl,
    }, [gatewayConfig]);
    gateway = await buildGateway(config, silentLogger());
    url = await gateway.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await gateway.close();
    await new Promise((resolve) => upstream.close(resolve));
    await issuer.close();
  });

  it('answers a restricted route without a token with 401 and a Bearer challenge, never calling the upstream', async () => {
    const before = reached.length;
    const response = await fetch(`${url}/api/v1/products/6b1e1d1e-0000-4000-8000-000000000000`);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api-platform"');
    expect(response.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(await response.json()).toMatchObject({ status: 401, code: 'PLATFORM_AUTH_INVALID_TOKEN' });
    expect(reached.length).toBe(before);
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
    expect(reached).toContain('GET /api/v1/products');
  });

  it.each([
    ['GET', '/api/v1/health/liveness'],
    ['GET', '/api/v1/health/readiness'],
    ['GET', '/api/v1/products/ping'],
    ['POST', '/api/v1/identity'],
    ['POST', '/api/v1/sso/token'],
    ['POST', '/api/v1/sso/revoke'],
    ['GET', '/api/v1/sso/jwks'],
    ['POST', '/api/v1/sso/introspect'],
    ['GET', '/.well-known/openid-configuration'],
    ['GET', '/.well-known/oauth-authorization-server'],
    ['GET', '/api/v1/sso/federation/google/start'],
    ['GET', '/api/v1/sso/federation/github/callback'],
  ])('lets %s %s through without a token', async (method, path) => {
    const response = await fetch(`${url}${path}`, { method, ...(method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}) });
    expect(response.status).toBe(200);
    expect(reached).toContain(`${method} ${path}`);
  });

  it('answers a path no route matches with 401 without a token, so the edge does not reveal what exists', async () => {
    for (const path of ['/nowhere', '/internal/v1/identities/lookup']) {
      const response = await fetch(`${url}${path}`, { method: 'POST' });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="api-platform"');
    }
    const token = await issuer.mint('6b1e1d1e-0000-4000-8000-000000000001', []);
    expect((await fetch(`${url}/nowhere`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(404);
  });

  it('serves its own probes and docs without a token', async () => {
    expect((await fetch(`${url}/health/liveness`)).status).toBe(200);
    expect((await fetch(`${url}/docs`)).status).toBe(200);
  });

  it.each([
    ['GET', '/api/v1/identity'],
    ['GET', '/api/v1/identity/6b1e1d1e-0000-4000-8000-000000000000'],
    ['POST', '/api/v1/identity/x'],
    ['GET', '/api/v1/sso/userinfo'],
    ['GET', '/api/v1/sso/token'],
    ['HEAD', '/api/v1/sso/authorize'],
    ['GET', '/api/v1/sso/login'],
    ['GET', '/api/v1/sso/clients'],
    ['HEAD', '/api/v1/sso/federation/google/start'],
    ['POST', '/api/v1/sso/federation/google/callback'],
    ['GET', '/api/v1/sso/federation/google/start/../../clients'],
    ['GET', '/api/v1/sso/federation/google/other'],
    ['POST', '/api/v1/sso/token/../../products'],
    ['POST', '/api/v1/sso/tokens'],
    ['GET', '/api/v1/products/ping/x'],
    ['GET', '/internal/v1/identities/lookup'],
  ])('keeps %s %s restricted', (method, path) => {
    expect(isPublicRequest(method, path)).toBe(false);
  });
});
