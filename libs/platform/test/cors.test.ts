import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createApp, createLogger, ConfigError, invalidToken, loadConfig, type App } from '@app/platform';
import { CORS_EXPOSED, corsHeadersOf, corsPreflightAllowance } from '@app/testing';

const ALLOWED = 'https://app.example.com';
const OTHER = 'https://evil.example.net';
const PREFLIGHT_HEADERS = { 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' };

/** The edge of a platform: every route outside the public allowlist needs a token nobody here has. */
async function edgeApp(corsOrigins?: readonly string[]): Promise<App> {
  const app = await createApp({
    name: 'edge',
    version: '1.0.0',
    logger: createLogger({ LOG_LEVEL: 'silent' }),
    bodyLimit: 4096,
    auth: { verifier: { verify: () => Promise.reject(invalidToken()) }, edge: true },
    corsOrigins,
  });
  app.get('/api/v1/things', async () => [{ id: 1 }]);
  app.post('/api/v1/things', async () => ({ id: 2 }));
  app.get('/api/v1/things/ping', { config: { auth: 'public' } }, async (_request, reply) => {
    reply.header('etag', '"v1"').header('link', '</api/v1/things?offset=20>; rel="next"');
    return [{ pong: true }];
  });
  await app.ready();
  return app;
}

describe('CORS at the edge, with CORS_ORIGINS set', () => {
  let app: App;
  beforeAll(async () => {
    app = await edgeApp([ALLOWED, 'http://localhost:5173']);
  });
  afterAll(() => app.close());

  it('answers a preflight from an allowed origin 204, allowing the API methods, authorization and content-type, for two hours', async () => {
    const response = await app.inject({ method: 'OPTIONS', url: '/api/v1/things', headers: { origin: ALLOWED, ...PREFLIGHT_HEADERS } });
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe('');
    expect(corsHeadersOf(response.headers)).toEqual(corsPreflightAllowance(ALLOWED));
    expect(response.headers.vary).toBe('Origin');
  });

  it('answers a preflight to a protected route without a token 204, not 401: a browser never sends one', async () => {
    const response = await app.inject({ method: 'OPTIONS', url: '/api/v1/things', headers: { origin: 'http://localhost:5173', ...PREFLIGHT_HEADERS } });
    expect(response.statusCode).toBe(204);
    expect(response.headers['access-control-allow-origin']).toBe('http://localhost:5173');
    expect(response.headers['www-authenticate']).toBeUndefined();
  });

  it('gives a preflight from another origin no CORS header, and the 404 of any unknown route', async () => {
    const response = await app.inject({ method: 'OPTIONS', url: '/api/v1/things', headers: { origin: OTHER, ...PREFLIGHT_HEADERS } });
    expect(response.statusCode).toBe(404);
    expect(corsHeadersOf(response.headers)).toEqual({});
    expect(response.json()).toMatchObject({ status: 404, code: 'PLATFORM_ROUTE_NOT_FOUND' });
  });

  it('matches origins exactly: another scheme, port or a suffix is another origin', async () => {
    for (const origin of ['http://app.example.com', 'https://app.example.com:8443', 'https://app.example.com.evil.net', 'null']) {
      const response = await app.inject({ method: 'GET', url: '/api/v1/things/ping', headers: { origin } });
      expect([origin, corsHeadersOf(response.headers)]).toEqual([origin, {}]);
    }
  });

  it('lets an allowed origin read an actual answer and its Link and ETag headers', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/v1/things/ping', headers: { origin: ALLOWED } });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual([{ pong: true }]);
    expect(corsHeadersOf(response.headers)).toEqual({
      'access-control-allow-origin': ALLOWED,
      'access-control-expose-headers': CORS_EXPOSED,
    });
    expect(response.headers.vary).toBe('Origin');
  });

  it('lets an allowed origin read a 401 too, whose problem varies on both Origin and Accept-Language', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/v1/things', headers: { origin: ALLOWED } });
    expect(response.statusCode).toBe(401);
    expect(response.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(response.headers.vary).toBe('Origin, Accept-Language');
  });

  it('adds nothing to a request without Origin (same-origin and server-side callers)', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/v1/things/ping' });
    expect(response.statusCode).toBe(200);
    expect(corsHeadersOf(response.headers)).toEqual({});
  });
});

describe('CORS with CORS_ORIGINS unset', () => {
  let app: App;
  beforeAll(async () => {
    app = await edgeApp(undefined);
  });
  afterAll(() => app.close());

  it('sends no CORS header on a preflight, which is an unknown route (404)', async () => {
    const response = await app.inject({ method: 'OPTIONS', url: '/api/v1/things', headers: { origin: ALLOWED, ...PREFLIGHT_HEADERS } });
    expect(response.statusCode).toBe(404);
    expect(corsHeadersOf(response.headers)).toEqual({});
  });

  it('sends no CORS header on an answer to a request with Origin', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/v1/things/ping', headers: { origin: ALLOWED } });
    expect(response.statusCode).toBe(200);
    expect(corsHeadersOf(response.headers)).toEqual({});
    expect(response.headers.vary).toBeUndefined();
  });
});

describe('CORS_ORIGINS', () => {
  it('is a list of exact origins, spaces around commas ignored', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://app.example.com, http://localhost:5173' }).CORS_ORIGINS).toEqual(['https://app.example.com', 'http://localhost:5173']);
    expect(loadConfig({}).CORS_ORIGINS).toBeUndefined();
  });

  it.each([
    ['a path', 'https://app.example.com/'],
    ['a wildcard', '*'],
    ['no scheme', 'app.example.com'],
    ['another scheme', 'ftp://app.example.com'],
    ['a default port a browser never sends', 'https://app.example.com:443'],
    ['an upper-case host a browser never sends', 'https://App.example.com'],
  ])('refuses %s, naming the variable and the value', (_what, value) => {
    expect(() => loadConfig({ CORS_ORIGINS: `http://localhost:5173,${value}` })).toThrow(ConfigError);
    try {
      loadConfig({ CORS_ORIGINS: `http://localhost:5173,${value}` });
    } catch (error) {
      expect((error as ConfigError).problems).toEqual([
        {
          variable: 'CORS_ORIGINS',
          expected: `expected comma-separated origins, each scheme://host[:port] with no path (e.g. https://app.example.com); not an origin: ${value}, got ${JSON.stringify(`http://localhost:5173,${value}`)}`,
        },
      ]);
    }
  });
});
