import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  createApp,
  createTokenVerifier,
  declareAuth,
  isOwnerOrAdmin,
  isPrivileged,
  principalOf,
  type App,
  type Principal,
  type RouteAuth,
  type TokenVerifier,
} from '@app/platform';
import { silentLogger, startTokenIssuer, type TokenIssuer } from '@app/testing';
import { base64url, createLocalJWKSet, SignJWT, type CryptoKey } from 'jose';
import { z } from 'zod';

/**
 * The route-auth rules, attacked from outside through app.inject with real ES256 tokens
 * checked by the real verifier (against the issuer's public key, no JWKS fetch).
 */

const USER = randomUUID();
const ADMIN = randomUUID();
const EDITOR = randomUUID();

let issuer: TokenIssuer;
let stranger: TokenIssuer;
let verifier: TokenVerifier;
/** Bearer tokens by who holds them; each a valid token unless its name says otherwise. */
const tokens: Record<
  | 'user'
  | 'admin'
  | 'editor'
  | 'expired'
  | 'forged'
  | 'otherAudience'
  | 'otherIssuer'
  | 'unsigned'
  | 'fromTheFuture'
  | 'slightlyAhead'
  | 'withoutIat'
  | 'withoutJti'
  | 'withoutSub',
  string
> = {} as never;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
/** RFC 6750 §3.1: no credentials sent -> a challenge without an error code; a bad token -> invalid_token. */
const CHALLENGE = 'Bearer realm="api-platform"';
const INVALID_TOKEN = 'Bearer realm="api-platform", error="invalid_token"';

beforeAll(async () => {
  issuer = await startTokenIssuer();
  stranger = await startTokenIssuer();
  verifier = createTokenVerifier(
    { jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: issuer.audience },
    createLocalJWKSet({ keys: [issuer.publicJwk] }),
  );
  tokens.user = await issuer.mint(USER);
  tokens.admin = await issuer.mint(ADMIN, ['admin']);
  tokens.editor = await issuer.mint(EDITOR, ['editor']);
  tokens.expired = await issuer.mint(USER, [], {}, '2 hours ago');
  /** A token like the issuer's, but signed with `key` and with `iss`/`aud` as given. */
  const sign = (key: CryptoKey, claims: { iss?: string; aud?: string; roles?: string[]; sub?: string } = {}) =>
    new SignJWT({ roles: claims.roles ?? [] })
      .setProtectedHeader({ alg: 'ES256', kid: issuer.kid, typ: 'JWT' })
      .setIssuer(claims.iss ?? issuer.issuer)
      .setAudience(claims.aud ?? issuer.audience)
      .setSubject(claims.sub ?? USER)
      .setIssuedAt()
      .setJti(randomUUID())
      .setExpirationTime('15m')
      .sign(key);
  // Another key, but the trusted key's kid: only the signature can give it away.
  tokens.forged = await sign(stranger.privateKey, { sub: ADMIN, roles: ['admin'] });
  tokens.otherAudience = await sign(issuer.privateKey, { aud: 'someone-else' });
  tokens.otherIssuer = await sign(issuer.privateKey, { iss: 'https://evil.example' });
  const now = Math.floor(Date.now() / 1000);
  /** A genuinely signed token with exactly these claims (nothing added). */
  const signExactly = (claims: Record<string, unknown>) =>
    new SignJWT({ iss: issuer.issuer, aud: issuer.audience, exp: now + 900, roles: [], ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: issuer.kid, typ: 'JWT' })
      .sign(issuer.privateKey);
  const complete = { sub: USER, iat: now, jti: randomUUID() };
  // The verifier's clock tolerance is 30 s by default.
  tokens.fromTheFuture = await signExactly({ ...complete, iat: now + 120, exp: now + 1_000 });
  tokens.slightlyAhead = await signExactly({ ...complete, iat: now + 10 });
  tokens.withoutIat = await signExactly({ sub: USER, jti: randomUUID() });
  tokens.withoutJti = await signExactly({ sub: USER, iat: now });
  tokens.withoutSub = await signExactly({ iat: now, jti: randomUUID() });
  const encode = (value: object) => base64url.encode(JSON.stringify(value));
  tokens.unsigned = `${encode({ alg: 'none', kid: issuer.kid, typ: 'JWT' })}.${encode({
    iss: issuer.issuer,
    aud: issuer.audience,
    sub: ADMIN,
    iat: now,
    exp: now + 900,
    jti: randomUUID(),
    roles: ['admin'],
  })}.`;
});

afterAll(async () => {
  await issuer.close();
  await stranger.close();
});

/** What every test route answers: who the hook says is calling, if anyone. */
const whoami = async (request: { principal?: Principal }) => ({ principal: request.principal?.id ?? null });
const thingSchema = z.strictObject({ name: z.string().min(3) });

/** One GET and one POST (validated body) per policy; `undeclared` declares nothing. */
const POLICIES: Record<string, RouteAuth | undefined> = {
  public: 'public',
  optional: 'optional',
  authenticated: 'authenticated',
  undeclared: undefined,
  editors: { roles: ['editor', 'admin'] },
};

async function buildApp(options: { edge: boolean; withAuth?: boolean }, routes?: (app: App) => Promise<void> | void): Promise<App> {
  const app = await createApp({
    name: 'route-auth-test',
    version: '1.0.0',
    logger: silentLogger(),
    bodyLimit: 1024,
    ...(options.withAuth === false ? {} : { auth: { verifier, edge: options.edge } }),
  });
  for (const [name, auth] of Object.entries(POLICIES)) {
    const config = auth === undefined ? {} : { config: { auth } };
    app.get(`/${name}`, config, whoami);
    app.post(`/${name}`, { ...config, schema: { body: thingSchema } }, whoami);
    app.get(`/${name}/:id`, { ...config, schema: { params: z.object({ id: z.uuid() }) } }, whoami);
  }
  await routes?.(app);
  await app.ready();
  return app;
}

describe('route auth in a service (not the edge)', () => {
  let app: App;
  beforeAll(async () => {
    app = await buildApp({ edge: false }, (routes) => {
      routes.get('/public/principal-of', { config: { auth: 'public' } }, async (request) => ({ id: principalOf(request).id }));
    });
  });
  afterAll(() => app.close());

  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers });

  describe('public', () => {
    it('answers anyone, without a token', async () => {
      const response = await get('/public');
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ principal: null });
    });

    it.each(['forged', 'expired', 'unsigned'] as const)('does not look at a token that is sent, even a bad one (%s)', async (name) => {
      const response = await get('/public', bearer(tokens[name]));
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ principal: null });
    });

    it('does not look at a valid token either: principalOf on a public route is 401', async () => {
      expect((await get('/public', bearer(tokens.admin))).json()).toEqual({ principal: null });
      const response = await get('/public/principal-of', bearer(tokens.admin));
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({ code: 'PLATFORM_AUTH_INVALID_TOKEN' });
    });
  });

  describe('optional', () => {
    it('answers an anonymous caller, with no principal', async () => {
      const response = await get('/optional');
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ principal: null });
    });

    it('knows the caller who sends a valid token', async () => {
      const response = await get('/optional', bearer(tokens.user));
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ principal: USER });
    });

    it.each(['forged', 'expired', 'otherAudience', 'otherIssuer', 'unsigned'] as const)(
      'answers 401 to a %s token instead of treating the caller as anonymous',
      async (name) => {
        const response = await get('/optional', bearer(tokens[name]));
        expect(response.statusCode).toBe(401);
        expect(response.headers['www-authenticate']).toBe(INVALID_TOKEN);
      },
    );

    it.each([
      ['Basic dXNlcjpwYXNz', CHALLENGE],
      ['Bearer', INVALID_TOKEN],
      ['', CHALLENGE],
      ['Bearer two tokens', INVALID_TOKEN],
    ])('answers 401 to an Authorization header that is not one bearer token (%j)', async (authorization, challenge) => {
      const response = await get('/optional', { authorization });
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe(challenge);
    });
  });

  describe.each(['authenticated', 'undeclared'])('%s', (name) => {
    it('answers 401 problem+json with a Bearer challenge without an error code without a token (RFC 6750 §3.1)', async () => {
      const response = await get(`/${name}`);
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe(CHALLENGE);
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(response.json()).toMatchObject({ status: 401, code: 'PLATFORM_AUTH_INVALID_TOKEN', instance: `/${name}` });
    });

    it.each(['forged', 'expired', 'otherAudience', 'otherIssuer', 'unsigned', 'fromTheFuture', 'withoutIat', 'withoutJti', 'withoutSub'] as const)(
      'answers 401 invalid_token to a %s token',
      async (token) => {
        const response = await get(`/${name}`, bearer(tokens[token]));
        expect(response.statusCode).toBe(401);
        expect(response.headers['www-authenticate']).toBe(INVALID_TOKEN);
        expect(response.json()).toMatchObject({ code: 'PLATFORM_AUTH_INVALID_TOKEN' });
      },
    );

    it('accepts a token issued a little in the future, within the clock tolerance', async () => {
      expect((await get(`/${name}`, bearer(tokens.slightlyAhead))).statusCode).toBe(200);
    });

    it.each([
      ['a Basic header', 'Basic dXNlcjpwYXNz'],
      ['a token in the wrong scheme', `Token ${'x'}`],
      ['a token too long to be real', `Bearer ${'a'.repeat(9_000)}`],
      ['garbage', 'Bearer not.a.jwt'],
    ])('answers 401 to %s', async (_what, authorization) => {
      expect((await get(`/${name}`, { authorization })).statusCode).toBe(401);
    });

    it('answers a valid token, with its subject as the principal', async () => {
      const response = await get(`/${name}`, bearer(tokens.user));
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ principal: USER });
    });
  });

  describe('roles', () => {
    it('answers 401 without a token and to a bad one, not 403', async () => {
      expect((await get('/editors')).statusCode).toBe(401);
      expect((await get('/editors', bearer(tokens.forged))).statusCode).toBe(401);
    });

    it('answers 403 problem+json to a valid token without any of the roles', async () => {
      const response = await get('/editors', bearer(tokens.user));
      expect(response.statusCode).toBe(403);
      expect(response.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(response.json()).toMatchObject({ status: 403, code: 'PLATFORM_AUTH_FORBIDDEN' });
    });

    it.each([
      ['editor', EDITOR],
      ['admin', ADMIN],
    ] as const)('answers a token carrying one of the roles (%s)', async (name, id) => {
      const response = await get('/editors', bearer(tokens[name]));
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ principal: id });
    });

    it('reads the roles from the signed token only: a forged admin claim is 401', async () => {
      expect((await get('/editors', bearer(tokens.unsigned))).statusCode).toBe(401);
    });
  });

  describe('authentication comes before validation', () => {
    const badRequests = [
      ['an invalid body', { 'content-type': 'application/json' }, JSON.stringify({ name: 'x', admin: true })],
      ['malformed JSON', { 'content-type': 'application/json' }, '{"name": '],
      ['an empty JSON body', { 'content-type': 'application/json' }, ''],
      ['a wrong content type', { 'content-type': 'text/xml' }, '<a/>'],
      ['a body over the limit', { 'content-type': 'application/json' }, JSON.stringify({ name: 'x'.repeat(2_000) })],
      ['a __proto__ key', { 'content-type': 'application/json' }, '{"name":"abc","__proto__":{"admin":true}}'],
    ] as const;

    describe.each(['authenticated', 'undeclared', 'editors'])('on a route that is %s', (name) => {
      it.each(badRequests)('answers %s without a token with 401, not 4xx of the body', async (_what, headers, payload) => {
        const response = await app.inject({ method: 'POST', url: `/${name}`, headers, payload });
        expect(response.statusCode).toBe(401);
        expect(response.json()).toMatchObject({ code: 'PLATFORM_AUTH_INVALID_TOKEN' });
      });

      it('answers an invalid path parameter without a token with 401, not 400', async () => {
        expect((await get(`/${name}/not-a-uuid`)).statusCode).toBe(401);
      });

      it('answers the same bad body with an invalid token with 401', async () => {
        const response = await app.inject({ method: 'POST', url: `/${name}`, headers: bearer(tokens.expired), payload: { name: 'x' } });
        expect(response.statusCode).toBe(401);
      });
    });

    it('answers an invalid body on a roles route with a valid token lacking the role with 403, not 400', async () => {
      const response = await app.inject({ method: 'POST', url: '/editors', headers: bearer(tokens.user), payload: { name: 'x' } });
      expect(response.statusCode).toBe(403);
    });

    it('answers an invalid body on an optional route with a bad token with 401, not 400', async () => {
      const response = await app.inject({ method: 'POST', url: '/optional', headers: bearer(tokens.forged), payload: { name: 'x' } });
      expect(response.statusCode).toBe(401);
    });

    it.each(['public', 'optional', 'authenticated', 'undeclared', 'editors'])('still validates once the caller may call a %s route: 400', async (name) => {
      const response = await app.inject({ method: 'POST', url: `/${name}`, headers: bearer(tokens.admin), payload: { name: 'x' } });
      expect(response.statusCode).toBe(400);
      expect(response.json()).toMatchObject({ code: 'PLATFORM_VALIDATION_FAILED' });
      expect((await get(`/${name}/not-a-uuid`, bearer(tokens.admin))).statusCode).toBe(400);
    });

    it.each(['public', 'optional'])('validates an anonymous call to a %s route: 400', async (name) => {
      expect((await app.inject({ method: 'POST', url: `/${name}`, payload: { name: 'x' } })).statusCode).toBe(400);
    });
  });

  it('answers a route that does not exist with 404 without a token: a service has nothing to hide', async () => {
    const response = await app.inject({ method: 'POST', url: '/nowhere' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'PLATFORM_ROUTE_NOT_FOUND' });
  });

  it('answers a method a path does not have with 404 without a token', async () => {
    expect((await app.inject({ method: 'DELETE', url: '/authenticated' })).statusCode).toBe(404);
  });

  it('serves its OpenAPI document without a token', async () => {
    expect((await get('/openapi.json')).statusCode).toBe(200);
  });

  it('applies the policy of the GET route to its HEAD route', async () => {
    expect((await app.inject({ method: 'HEAD', url: '/authenticated' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'HEAD', url: '/authenticated', headers: bearer(tokens.user) })).statusCode).toBe(200);
    expect((await app.inject({ method: 'HEAD', url: '/public' })).statusCode).toBe(200);
  });
});

describe('route auth at the edge (the gateway, the all-in-one)', () => {
  let app: App;
  beforeAll(async () => {
    app = await buildApp({ edge: true }, (routes) => {
      routes.get('/health/liveness', { config: { auth: 'public' } }, whoami);
      routes.get('/api/v1/widgets/ping', { config: { auth: 'public' } }, whoami);
      routes.get('/api/v1/widgets/:id', { config: { auth: 'authenticated' } }, whoami);
      routes.post('/api/v1/sso/token', { config: { auth: 'optional' }, schema: { body: thingSchema } }, whoami);
      // A proxy: its own `auth` lets every request through, the route behind it decides at the edge.
      routes.get(
        '/forwarded/*',
        { config: { auth: 'public', forwardedAuth: (method, url) => (method === 'GET' && url.split('?')[0] === '/forwarded/open' ? 'public' : undefined) } },
        whoami,
      );
    });
  });
  afterAll(() => app.close());

  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers });

  it('answers a route declared public without a token, and does not look at one sent: its declaration is the allowlist', async () => {
    for (const url of ['/public', '/health/liveness', '/api/v1/widgets/ping', '/api/v1/widgets/ping?x=1', '/api/v1/widgets/ping/']) {
      const response = await get(url);
      expect([url, response.statusCode, response.json()]).toEqual([url, 200, { principal: null }]);
    }
    expect((await get('/public', bearer(tokens.forged))).statusCode).toBe(200);
  });

  it('keeps a route declared optional optional: anonymous, known, or 401 to a bad token', async () => {
    expect((await get('/optional')).json()).toEqual({ principal: null });
    expect((await get('/optional', bearer(tokens.user))).json()).toEqual({ principal: USER });
    expect((await get('/optional', bearer(tokens.forged))).headers['www-authenticate']).toBe(INVALID_TOKEN);
    const post = (headers: Record<string, string>) => app.inject({ method: 'POST', url: '/api/v1/sso/token', headers, payload: { name: 'abc' } });
    expect((await post({})).json()).toEqual({ principal: null });
    expect((await post(bearer(tokens.user))).json()).toEqual({ principal: USER });
    expect((await post(bearer(tokens.expired))).statusCode).toBe(401);
    // Anonymous, it is validated like any public route.
    expect((await app.inject({ method: 'POST', url: '/api/v1/sso/token', payload: { name: 'x' } })).statusCode).toBe(400);
  });

  it('wants a token for every route not declared open: authenticated, undeclared, roles', async () => {
    for (const url of ['/authenticated', '/undeclared', '/editors', '/api/v1/widgets/6b1e1d1e-0000-4000-8000-000000000000']) {
      const response = await get(url);
      expect([url, response.statusCode, response.headers['www-authenticate']]).toEqual([url, 401, CHALLENGE]);
    }
    expect((await get('/authenticated', bearer(tokens.user))).statusCode).toBe(200);
  });

  it('matches by method and route: another method, a sibling path or a HEAD the route does not have wants a token', async () => {
    expect((await app.inject({ method: 'POST', url: '/health/liveness' })).statusCode).toBe(401);
    expect((await app.inject({ method: 'DELETE', url: '/public' })).statusCode).toBe(401);
    expect((await get('/api/v1/widgets/ping/x')).statusCode).toBe(401);
    expect((await get('/api/v1/sso/token')).statusCode).toBe(401);
    expect((await app.inject({ method: 'HEAD', url: '/api/v1/sso/token' })).statusCode).toBe(401);
    // A GET's HEAD twin is declared as its GET is.
    expect((await app.inject({ method: 'HEAD', url: '/api/v1/widgets/ping' })).statusCode).toBe(200);
  });

  it('asks a forwarding route what the route behind it declares, and wants a token when it knows none', async () => {
    expect((await get('/forwarded/open')).json()).toEqual({ principal: null });
    expect((await get('/forwarded/open?x=1')).statusCode).toBe(200);
    for (const url of ['/forwarded/other', '/forwarded/open/x', '/forwarded//open']) {
      const response = await get(url);
      expect([url, response.statusCode]).toEqual([url, 401]);
    }
    expect((await app.inject({ method: 'POST', url: '/forwarded/open' })).statusCode).toBe(401);
    // Past the edge, the forwarding route's own `auth` applies: the service behind checks the rest.
    expect((await get('/forwarded/other', bearer(tokens.user))).json()).toEqual({ principal: USER });
  });

  it('answers a route that does not exist with 401 without a token, so it does not reveal what exists', async () => {
    for (const method of ['GET', 'POST', 'DELETE'] as const) {
      const response = await app.inject({ method, url: '/nowhere' });
      expect(response.statusCode).toBe(401);
      expect(response.headers['www-authenticate']).toBe(CHALLENGE);
    }
    expect((await get('/nowhere', bearer(tokens.expired))).statusCode).toBe(401);
  });

  it('answers 404 once the caller is authenticated', async () => {
    const response = await get('/nowhere', bearer(tokens.user));
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'PLATFORM_ROUTE_NOT_FOUND' });
  });

  it('wants a token for its own OpenAPI document, which is for its peers', async () => {
    expect((await get('/openapi.json')).statusCode).toBe(401);
    expect((await get('/openapi.json', bearer(tokens.user))).statusCode).toBe(200);
  });

  it('answers a bad body without a token with 401 on every route not declared open, and validates the open ones', async () => {
    for (const [name, auth] of Object.entries(POLICIES)) {
      const response = await app.inject({ method: 'POST', url: `/${name}`, headers: { 'content-type': 'application/json' }, payload: '{"name": ' });
      expect([name, response.statusCode]).toEqual([name, auth === 'public' || auth === 'optional' ? 400 : 401]);
    }
  });

  it('enforces the roles of a route: 403 to a valid token without them', async () => {
    expect((await get('/editors', bearer(tokens.user))).statusCode).toBe(403);
    expect((await get('/editors', bearer(tokens.editor))).statusCode).toBe(200);
  });
});

describe('an app created without auth options', () => {
  let app: App;
  beforeAll(async () => {
    app = await buildApp({ edge: false, withAuth: false });
  });
  afterAll(() => app.close());

  it('answers public routes, and 401 to every other route even with a valid token', async () => {
    expect((await app.inject({ method: 'GET', url: '/public' })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/optional' })).statusCode).toBe(200);
    for (const name of ['authenticated', 'undeclared', 'editors']) {
      expect((await app.inject({ method: 'GET', url: `/${name}`, headers: bearer(tokens.admin) })).statusCode).toBe(401);
    }
    expect((await app.inject({ method: 'GET', url: '/optional', headers: bearer(tokens.admin) })).statusCode).toBe(401);
  });
});

describe('declareAuth', () => {
  let app: App;
  beforeAll(async () => {
    app = await createApp({ name: 'declare-auth-test', version: '1.0.0', logger: silentLogger(), bodyLimit: 1024, auth: { verifier, edge: false } });
    await app.register(async (scope) => {
      scope.get('/open/before', whoami);
      declareAuth(scope, 'public');
      scope.get('/open/plain', whoami);
      // A plugin's own routes, which take no route options from us.
      await scope.register(async (plugin) => {
        plugin.get('/open/plugin', whoami);
      });
    });
    await app.register(async (scope) => {
      declareAuth(scope, { roles: ['admin'] });
      scope.get('/admin/plugin', whoami);
    });
    app.get('/sibling', whoami);
    await app.ready();
  });
  afterAll(() => app.close());

  const status = async (url: string, headers: Record<string, string> = {}) => (await app.inject({ method: 'GET', url, headers })).statusCode;

  it('opens every route registered on the scope after it, the scope’s plugins included', async () => {
    expect(await status('/open/plain')).toBe(200);
    expect(await status('/open/plugin')).toBe(200);
  });

  it('leaves the routes registered before it as they were', async () => {
    expect(await status('/open/before')).toBe(401);
  });

  it('stays in its scope: a sibling route still defaults to authenticated', async () => {
    expect(await status('/sibling')).toBe(401);
    expect(await status('/sibling', bearer(tokens.user))).toBe(200);
  });

  it('declares roles too: 401, 403, then 200 for the role', async () => {
    expect(await status('/admin/plugin')).toBe(401);
    expect(await status('/admin/plugin', bearer(tokens.user))).toBe(403);
    expect(await status('/admin/plugin', bearer(tokens.admin))).toBe(200);
  });
});

describe('isOwnerOrAdmin', () => {
  const principal = (id: string, roles: string[]): Principal => ({
    id,
    roles,
    claims: { iss: 'i', aud: 'a', sub: id, iat: 0, exp: 1, jti: 'j', roles },
  });
  const owner = randomUUID();

  it('lets the identity itself act on its resources', () => {
    expect(isOwnerOrAdmin(principal(owner, []), owner)).toBe(true);
  });

  it('refuses anyone else without a privileged role', () => {
    expect(isOwnerOrAdmin(principal(randomUUID(), []), owner)).toBe(false);
    expect(isOwnerOrAdmin(principal(randomUUID(), ['editor', 'user']), owner)).toBe(false);
  });

  it('lets admins and other services (system) act on anyone’s', () => {
    expect(isOwnerOrAdmin(principal(randomUUID(), ['admin']), owner)).toBe(true);
    expect(isOwnerOrAdmin(principal(randomUUID(), ['system']), owner)).toBe(true);
    expect(isPrivileged(principal(randomUUID(), ['user', 'admin']))).toBe(true);
  });

  it('matches roles and ids exactly: no prefix, no case folding', () => {
    expect(isOwnerOrAdmin(principal(randomUUID(), ['Admin', 'administrator', 'systems']), owner)).toBe(false);
    expect(isOwnerOrAdmin(principal(owner.toUpperCase(), []), owner)).toBe(false);
  });
});
