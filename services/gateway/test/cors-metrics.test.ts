import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildGateway } from '@app/gateway';
import { startManagementServer, type App } from '@app/platform';
import { CORS_EXPOSED, corsHeadersOf, corsPreflightAllowance, silentLogger, startTokenIssuer, testConfig, type TokenIssuer } from '@app/testing';
import { gatewayConfig } from '../src/config.js';

const ALLOWED = 'https://app.example.com';
const PREFLIGHT = { 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'authorization, content-type' };

/**
 * An identity service that answers every call 200 with CORS headers of its own (as a
 * misconfigured service might) and remembers what reached it.
 */
async function startUpstream(): Promise<{ url: string; seen: IncomingMessage[]; server: Server }> {
  const seen: IncomingMessage[] = [];
  const server = createServer((request, response) => {
    seen.push(request);
    response.writeHead(200, {
      'content-type': 'application/json',
      'access-control-allow-origin': '*',
      'access-control-allow-credentials': 'true',
      vary: 'Accept-Language',
      etag: '"e1"',
    });
    response.end('[{"id":"1"}]');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen, server };
}

describe.each([
  { cors: true, env: { CORS_ORIGINS: `${ALLOWED},http://localhost:5173` } },
  { cors: false, env: {} },
])('the split-mode gateway (CORS_ORIGINS set: $cors)', ({ cors, env }) => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let issuer: TokenIssuer;
  let gateway: App;
  let url: string;
  let auth: Record<string, string>;

  beforeAll(async () => {
    upstream = await startUpstream();
    issuer = await startTokenIssuer();
    auth = { authorization: `Bearer ${await issuer.mint('7b0c2d9e-1f4a-4e55-9d0c-3a1f7c5e2b10')}` };
    gateway = await buildGateway(
      testConfig({ PLATFORM_SERVICES: 'identity', IDENTITY_URL: upstream.url, HEALTH_URL: upstream.url, JWKS_URL: issuer.jwksUrl, ...env }, [gatewayConfig]),
      silentLogger(),
    );
    url = await gateway.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await gateway.close();
    await new Promise((resolve) => upstream.server.close(resolve));
    await issuer.close();
  });

  it('never proxies an OPTIONS request: the edge answers it', async () => {
    const before = upstream.seen.length;
    const response = await fetch(`${url}/api/v1/identity/me`, { method: 'OPTIONS', headers: { origin: ALLOWED, ...PREFLIGHT } });
    expect(response.status).toBe(cors ? 204 : 404);
    expect(upstream.seen.length).toBe(before);
  });

  if (cors) {
    it('answers a preflight to a protected route, which carries no token, 204 with the edge\'s allowance', async () => {
      const response = await fetch(`${url}/api/v1/identity/me`, { method: 'OPTIONS', headers: { origin: ALLOWED, ...PREFLIGHT } });
      expect(response.status).toBe(204);
      expect(await response.text()).toBe('');
      expect(corsHeadersOf(response.headers)).toEqual(corsPreflightAllowance(ALLOWED));
    });

    it('gives a preflight from another origin the 404 of an unknown route and no CORS header', async () => {
      const response = await fetch(`${url}/api/v1/identity/me`, { method: 'OPTIONS', headers: { origin: 'https://evil.example.net', ...PREFLIGHT } });
      expect(response.status).toBe(404);
      expect(corsHeadersOf(response.headers)).toEqual({});
    });

    it('sends its own CORS headers on a proxied answer, once, in place of the upstream\'s, and keeps both Vary fields', async () => {
      const response = await fetch(`${url}/api/v1/identity/me`, { headers: { origin: ALLOWED, ...auth } });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual([{ id: '1' }]);
      expect(corsHeadersOf(response.headers)).toEqual({
        'access-control-allow-origin': ALLOWED,
        'access-control-expose-headers': CORS_EXPOSED,
      });
      expect(response.headers.get('vary')).toBe('Accept-Language, Origin');
      expect(response.headers.get('etag')).toBe('"e1"');
    });

    it('gives a proxied answer to another origin no CORS header, not even the upstream\'s', async () => {
      const response = await fetch(`${url}/api/v1/identity/me`, { headers: { origin: 'https://evil.example.net', ...auth } });
      expect(response.status).toBe(200);
      expect(corsHeadersOf(response.headers)).toEqual({});
    });
  } else {
    it('passes a proxied answer\'s headers through unchanged', async () => {
      const response = await fetch(`${url}/api/v1/identity/me`, { headers: { origin: ALLOWED, ...auth } });
      expect(response.status).toBe(200);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(response.headers.get('vary')).toBe('Accept-Language');
    });
  }

  it('serves no /metrics on its public port, not even the upstream\'s: a token is asked for and nothing is proxied', async () => {
    const before = upstream.seen.length;
    for (const headers of [{}, auth]) {
      const response = await fetch(`${url}/metrics`, { headers });
      expect(response.status).toBe(Object.keys(headers).length === 0 ? 401 : 404);
      expect(await response.text()).not.toContain('# TYPE');
    }
    expect(upstream.seen.length).toBe(before);
  });

  it('counts proxied requests under their route template in the metrics of its management port', async () => {
    const before = upstream.seen.length;
    await fetch(`${url}/api/v1/identity/abc?x=1`, { headers: auth });
    const management = await startManagementServer({ host: '127.0.0.1', port: 0, logger: silentLogger() });
    const [status, text] = await fetch(`${management.url}/metrics`)
      .then(async (response) => [response.status, await response.text()] as const)
      .finally(() => management.close());
    expect(status).toBe(200);
    expect(upstream.seen.length).toBe(before + 1);
    expect(text).toMatch(/^http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/identity\/\*",status_code="200"\} \d+$/m);
    expect(text).not.toContain('/api/v1/identity/abc');
  });
});
