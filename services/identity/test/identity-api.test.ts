// identity's own rules, through app.inject on the service as `buildServiceApp` builds it alone
// (split mode's shape): validation, uniqueness, who may read and change what, the last admin,
// entity tags and paging. test/identity runs the same service through whole platforms.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { identityApi } from '@app/contracts';
import { buildServiceApp, type App } from '@app/platform';
import { answerRevocationsAsSso, openTestDependencies, startTokenIssuer, testModes, type Json, type TokenIssuer, injectJson } from '@app/testing';
import { identityConfig, identityService } from '../src/index.js';

/** What a strong entity tag of the kit looks like: 22 base64url characters, quoted, no W/. */
const STRONG_TAG = /^"[\w-]{22}"$/;

describe.each(testModes())('identity through app.inject (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies<[typeof identityConfig]>>>;
  let issuer: TokenIssuer;
  let app: App;
  let admin: string;
  let system: string;
  /** sso's own service token: the only caller internal routes answer. */
  let platform: string;

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, options?: Parameters<typeof injectJson>[3]) => injectJson(app, method, url, options);
  /** A new identity with a unique email, and a token of its own. */
  const register = async (name = 'Someone', token?: string, extra: Json = {}) => {
    const reply = await call('POST', '/api/v1/identity', { token, body: { name, email: `${name.toLowerCase()}-${randomUUID()}@example.com`, ...extra } });
    expect(reply.status).toBe(201);
    const record = reply.body![0];
    return { record, etag: String(reply.headers.etag), token: await issuer.mint(record.id, record.roles) };
  };

  beforeAll(async () => {
    issuer = await startTokenIssuer();
    deps = await openTestDependencies(mode, { JWKS_URL: issuer.jwksUrl }, [identityConfig]);
    // No sso here: the test answers for its revocations (none), as the issuer does for its keys.
    await answerRevocationsAsSso(deps.bus);
    app = await buildServiceApp(identityService, deps);
    admin = await issuer.mint(randomUUID(), ['admin']);
    system = await issuer.mint(randomUUID(), ['system']);
    platform = await issuer.mint('service:sso', ['system']);
  });
  afterAll(async () => {
    await app?.close();
    await deps?.dispose();
    await issuer?.close();
  });

  describe('registering', () => {
    it('answers 201 with the record (email lower-cased, no roles), a strong ETag and its Location', async () => {
      const email = `Carol-${randomUUID()}@Example.COM`;
      const reply = await call('POST', '/api/v1/identity', { body: { name: 'Carol', email, avatar: 'https://cdn.example.com/carol.png' } });
      expect(reply.status).toBe(201);
      expect(reply.body).toEqual([
        {
          id: expect.any(String),
          name: 'Carol',
          email: email.toLowerCase(),
          avatar: 'https://cdn.example.com/carol.png',
          roles: [],
          activated: true,
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      ]);
      expect(reply.headers.etag).toMatch(STRONG_TAG);
      expect(reply.headers.location).toBe(`/api/v1/identity/${reply.body![0].id}`);
    });

    it('answers 400 naming the field for a bad email, a non-http avatar or an unknown field', async () => {
      const paths = async (body: Json) => {
        const reply = await call('POST', '/api/v1/identity', { body });
        expect(reply.status).toBe(400);
        expect(reply.body).toMatchObject({ code: 'PLATFORM_VALIDATION_FAILED' });
        return reply.body!.errors.map((error: { path: string }) => error.path);
      };
      expect(await paths({ name: 'X', email: 'not-an-email' })).toEqual(['body.email']);
      expect(await paths({ name: 'X', email: 'x@example.com', avatar: 'javascript:alert(1)' })).toEqual(['body.avatar']);
      await paths({ name: 'X', email: 'x@example.com', password: 'x' });
    });

    it('answers 422 IDENTITY_EMAIL_TAKEN when the email is taken, in any case', async () => {
      const { record } = await register('Ada');
      const reply = await call('POST', '/api/v1/identity', { body: { name: 'Ada 2', email: record.email.toUpperCase() } });
      expect(reply.status).toBe(422);
      expect(reply.body).toMatchObject({ status: 422, code: 'IDENTITY_EMAIL_TAKEN', detail: `The email ${record.email} is already used by another identity.` });
    });

    it('lets only an admin set roles: 403 to anonymous callers, users and system tokens', async () => {
      const { token: user } = await register('User');
      const body = () => ({ name: 'E', email: `e-${randomUUID()}@example.com`, roles: ['admin'] });
      expect((await call('POST', '/api/v1/identity', { body: body() })).status).toBe(403);
      expect((await call('POST', '/api/v1/identity', { token: user, body: body() })).status).toBe(403);
      const bySystem = await call('POST', '/api/v1/identity', { token: system, body: body() });
      expect([bySystem.status, bySystem.body!.code]).toEqual([403, 'IDENTITY_PRIVILEGED_FIELDS']);
      const byAdmin = await call('POST', '/api/v1/identity', { token: admin, body: body() });
      expect([byAdmin.status, byAdmin.body![0].roles]).toEqual([201, ['admin']]);
    });
  });

  describe('reading', () => {
    it('lets the identity itself, an admin and a system token read it; anyone else gets 403', async () => {
      const ada = await register('Ada');
      const bob = await register('Bob');
      for (const token of [ada.token, admin, system]) {
        const reply = await call('GET', `/api/v1/identity/${ada.record.id}`, { token });
        expect([reply.status, reply.body]).toEqual([200, [ada.record]]);
      }
      expect((await call('GET', `/api/v1/identity/${ada.record.id}`, { token: bob.token })).status).toBe(403);
      expect((await call('GET', `/api/v1/identity/email/${encodeURIComponent(ada.record.email)}`, { token: bob.token })).status).toBe(403);
    });

    it('answers 401 with WWW-Authenticate without a valid token, 404 for an unknown id and 400 for a malformed one', async () => {
      const { record } = await register();
      const anonymous = await call('GET', `/api/v1/identity/${record.id}`);
      expect([anonymous.status, anonymous.headers['www-authenticate']]).toEqual([401, 'Bearer realm="api-platform"']);
      expect((await call('GET', `/api/v1/identity/${record.id}`, { token: 'not.a.token' })).status).toBe(401);
      expect((await call('GET', `/api/v1/identity/${randomUUID()}`, { token: admin })).body).toMatchObject({ status: 404, code: 'IDENTITY_NOT_FOUND' });
      expect((await call('GET', '/api/v1/identity/12', { token: admin })).status).toBe(400);
    });

    it('finds an identity by email in any case, and answers 304 to If-None-Match with its tag', async () => {
      const { record, etag } = await register('Dora');
      const byEmail = await call('GET', `/api/v1/identity/email/${encodeURIComponent(record.email.toUpperCase())}`, { token: admin });
      expect([byEmail.status, byEmail.body, byEmail.headers.etag]).toEqual([200, [record], etag]);
      const notModified = await call('GET', `/api/v1/identity/${record.id}`, { token: admin, headers: { 'if-none-match': etag } });
      expect([notModified.status, notModified.headers.etag, notModified.text]).toEqual([304, etag, '']);
    });

    it('pages a list by cursor or offset, with a Link header and an opt-in exact count', async () => {
      const tag = randomUUID().slice(0, 8);
      for (const name of ['Pa', 'Pb', 'Pc']) await call('POST', '/api/v1/identity', { body: { name, email: `${name.toLowerCase()}-${tag}@example.com` } });
      const query = `email=ilike.*-${tag}@example.com&sort=email&limit=2`;
      const first = await call('GET', `/api/v1/identity?${query}`, { token: admin, headers: { prefer: 'count=exact' } });
      expect(first.status).toBe(200);
      expect(first.body!.map((identity: { name: string }) => identity.name)).toEqual(['Pa', 'Pb']);
      expect(first.headers['content-range']).toBe('0-1/3');
      const next = /^<([^>]+)>; rel="next"$/.exec(String(first.headers.link))?.[1];
      expect(next).toMatch(new RegExp(`^/api/v1/identity\\?${query.replace('@', '%40').replace(/[.*?]/g, '\\$&')}&cursor=[\\w-]+$`));
      const second = await call('GET', next!, { token: admin });
      expect(second.body!.map((identity: { name: string }) => identity.name)).toEqual(['Pc']);
      expect(second.headers.link).toBe(`</api/v1/identity?${query.replace('@', '%40')}>; rel="first"`);
      expect(second.headers['content-range']).toBeUndefined();
      const byOffset = await call('GET', `/api/v1/identity?${query}&offset=2`, { token: admin });
      expect(byOffset.body!.map((identity: { name: string }) => identity.name)).toEqual(['Pc']);
      expect(byOffset.headers.link).toContain('rel="prev"');
    });

    it('pages by cursor through ties on name: every identity exactly once across sign-ups between pages; 400 naming cursor for another filter', async () => {
      const tag = randomUUID().slice(0, 8);
      const signUp = () => call('POST', '/api/v1/identity', { body: { name: 'Tie', email: `tie-${randomUUID().slice(0, 8)}-${tag}@example.com` } }).then((reply) => reply.body![0].id as string);
      const before: string[] = [];
      for (let i = 0; i < 5; i++) before.push(await signUp());
      const nextOf = (link: unknown) => /<([^>]+)>; rel="next"/.exec(String(link ?? ''))?.[1];
      const seen: string[] = [];
      let page = await call('GET', `/api/v1/identity?email=ilike.*-${tag}@example.com&sort=-name&limit=2`, { token: admin });
      for (let step = 0; ; step++) {
        expect(page.status).toBe(200);
        seen.push(...page.body!.map((identity: { id: string }) => identity.id));
        const next = nextOf(page.headers.link);
        if (!next) break;
        if (step < 2) await signUp();
        page = await call('GET', next, { token: admin });
      }
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toEqual(expect.arrayContaining(before));
      expect([...seen].sort().reverse()).toEqual(seen); // one name: ordered by id alone, descending

      const first = await call('GET', `/api/v1/identity?email=ilike.*-${tag}@example.com&sort=-name&limit=2`, { token: admin, headers: { prefer: 'count=estimated' } });
      const exact = await call('GET', `/api/v1/identity?email=ilike.*-${tag}@example.com&sort=-name&limit=2`, { token: admin, headers: { prefer: 'count=exact' } });
      expect(first.headers['content-range']).toBe(exact.headers['content-range']);
      expect(first.headers['content-range']).toMatch(/^0-1\/\d+$/);
      const cursor = new URLSearchParams(nextOf(first.headers.link)!.split('?')[1]).get('cursor');
      const foreign = await call('GET', `/api/v1/identity?sort=-name&cursor=${cursor}`, { token: admin });
      expect([foreign.status, foreign.body!.errors.map((error: { path: string }) => error.path)]).toEqual([400, ['query.cursor']]);
    });

    it('lists only the caller itself for a non-admin, and answers 400 to bad paging, sorts and parameters', async () => {
      const { record, token } = await register();
      expect((await call('GET', '/api/v1/identity', { token })).body).toEqual([record]);
      for (const query of ['limit=0', 'limit=101', 'offset=-1', 'sort=password', 'activated=yes', 'color=red']) {
        expect((await call('GET', `/api/v1/identity?${query}`, { token: admin })).status).toBe(400);
      }
    });
  });

  describe('updating', () => {
    it('lets the identity change its name and answers the new tag; 412 to a stale If-Match, changing nothing', async () => {
      const { record, etag, token } = await register('Eve');
      const renamed = await call('PUT', `/api/v1/identity/${record.id}`, { token, headers: { 'if-match': etag }, body: { name: 'Evelyn' } });
      expect([renamed.status, renamed.body![0].name]).toEqual([200, 'Evelyn']);
      expect(renamed.headers.etag).toMatch(STRONG_TAG);
      expect(renamed.headers.etag).not.toBe(etag);
      const stale = await call('PUT', `/api/v1/identity/${record.id}`, { token, headers: { 'if-match': etag }, body: { name: 'Mallory' } });
      expect([stale.status, stale.body!.code]).toEqual([412, 'PLATFORM_PRECONDITION_FAILED']);
      const read = await call('GET', `/api/v1/identity/${record.id}`, { token });
      expect([read.body![0].name, read.headers.etag]).toEqual(['Evelyn', renamed.headers.etag]);
      expect((await call('PUT', `/api/v1/identity/${record.id}`, { token, headers: { 'if-match': '*' }, body: { name: 'Eve' } })).status).toBe(200);
    });

    it('answers 403 to roles or activation from a non-admin and to another user, 422 for a taken email, 404 for an unknown id', async () => {
      const ada = await register('Ada');
      const bob = await register('Bob');
      const put = (id: string, token: string, body: Json) => call('PUT', `/api/v1/identity/${id}`, { token, body });
      expect((await put(bob.record.id, bob.token, { roles: ['admin'] })).body).toMatchObject({ status: 403, code: 'IDENTITY_PRIVILEGED_FIELDS' });
      expect((await put(bob.record.id, bob.token, { activated: false })).status).toBe(403);
      expect((await put(bob.record.id, system, { roles: [] })).status).toBe(403);
      expect((await put(bob.record.id, ada.token, { name: 'Mallory' })).status).toBe(403);
      expect((await put(bob.record.id, bob.token, { email: ada.record.email.toUpperCase() })).body).toMatchObject({ status: 422, code: 'IDENTITY_EMAIL_TAKEN' });
      expect((await put(randomUUID(), admin, { name: 'Nobody' })).status).toBe(404);
      expect((await put(bob.record.id, bob.token, { id: randomUUID() })).status).toBe(400);
      expect((await call('GET', `/api/v1/identity/${bob.record.id}`, { token: admin })).body).toEqual([bob.record]);
    });

    it('keeps the last active admin: 409 IDENTITY_LAST_ADMIN to its demotion or deactivation, until there is another', async () => {
      const activeAdmins = async () =>
        (await deps.database.query<{ id: string }>(`select id from "identity"."identity" where activated and 'admin' = any(roles)`)).map((row) => row.id);
      const last = await register('Last', admin, { roles: ['admin'] });
      for (const id of await activeAdmins()) {
        if (id !== last.record.id) expect((await call('PUT', `/api/v1/identity/${id}`, { token: admin, body: { roles: [] } })).status).toBe(200);
      }
      for (const body of [{ roles: [] }, { activated: false }]) {
        const reply = await call('PUT', `/api/v1/identity/${last.record.id}`, { token: last.token, body });
        expect([reply.status, reply.body!.code]).toEqual([409, 'IDENTITY_LAST_ADMIN']);
      }
      const next = await register('Next', admin, { roles: ['admin'] });
      expect((await call('PUT', `/api/v1/identity/${last.record.id}`, { token: next.token, body: { activated: false } })).status).toBe(200);
      expect(await activeAdmins()).toEqual([next.record.id]);
    });

    it('has no delete route', async () => {
      const { record } = await register();
      expect((await call('DELETE', `/api/v1/identity/${record.id}`, { token: admin })).status).toBe(404);
    });
  });

  describe('internal routes (served by identity running alone)', () => {
    it('looks an identity up by email or id for the platform\'s own service token only', async () => {
      const { record, token } = await register('Finn');
      const lookup = (body: Json, bearer?: string) => call('POST', identityApi.methods.lookup.path, { token: bearer, body });
      const byEmail = await lookup({ email: record.email.toUpperCase() }, platform);
      expect([byEmail.status, byEmail.body]).toEqual([200, { id: record.id, name: 'Finn', email: record.email, avatar: null, roles: [], activated: true }]);
      expect((await lookup({ id: record.id }, platform)).body!.id).toBe(record.id);
      expect((await lookup({ email: `nobody-${randomUUID()}@example.com` }, platform)).status).toBe(404);
      for (const bearer of [admin, system, token]) expect((await lookup({ id: record.id }, bearer)).status).toBe(403);
      expect((await lookup({ id: record.id })).status).toBe(401);
    });

    it('creates an identity with roles for the platform\'s own service token; 422 when the email is taken', async () => {
      const body = { name: 'Boot', email: `boot-${randomUUID()}@example.com`, roles: ['admin'] };
      expect((await call('POST', identityApi.methods.create.path, { token: admin, body })).status).toBe(403);
      const created = await call('POST', identityApi.methods.create.path, { token: platform, body });
      expect([created.status, created.body]).toEqual([201, { id: expect.any(String), name: 'Boot', email: body.email, roles: ['admin'], activated: true }]);
      expect((await call('POST', identityApi.methods.create.path, { token: platform, body })).status).toBe(422);
    });
  });
});
