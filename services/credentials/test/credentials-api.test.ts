// credentials' own rules, through app.inject on the service as `buildServiceApp` builds it alone
// (split mode's shape), asking a stand-in for identity over HTTP: the provider rules,
// uniqueness, who may do what, password and API key verification, entity tags and paging.
// test/identity runs the same service beside the real identity, through whole platforms.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { credentialsApi } from '@app/contracts';
import { buildServiceApp, type App } from '@app/platform';
import {
  answerRevocationsAsSso,
  openTestDependencies,
  startDirectoryDouble,
  startTokenIssuer,
  testModes,
  type DirectoryDouble,
  type Json,
  type TokenIssuer,
  injectJson,
} from '@app/testing';
import { credentialsConfig, credentialsService } from '../src/index.js';

const PASSWORD = 'correct horse battery staple';
/** An API key as a client makes one: 32 random bytes, base64url (43 characters). */
const newKey = () => randomBytes(32).toString('base64url');
/** What a strong entity tag of the kit looks like: 22 base64url characters, quoted, no W/. */
const STRONG_TAG = /^"[\w-]{22}"$/;

describe.each(testModes())('credentials through app.inject (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies<[typeof credentialsConfig]>>>;
  let issuer: TokenIssuer;
  /** identity's contract on a free port: credentials asks it over HTTP whether an identity exists. */
  let identity: DirectoryDouble;
  let app: App;
  let admin: string;
  let system: string;
  /** sso's own service token: the only caller internal routes answer. */
  let platform: string;

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, options?: Parameters<typeof injectJson>[3]) => injectJson(app, method, url, options);
  const create = (body: Json, token = admin) => call('POST', '/api/v1/credentials', { token, body });
  const internal = (path: string, body: Json, token = platform) => call('POST', path, { token, body });
  /** A new identity that identity knows, and a token of its own. */
  const anIdentity = async (roles: string[] = []) => {
    const { id, email } = identity.addIdentity({ email: `someone-${randomUUID()}@example.com`, roles });
    return { id, email, token: await issuer.mint(id, roles) };
  };

  beforeAll(async () => {
    issuer = await startTokenIssuer();
    identity = await startDirectoryDouble({ jwksUrl: issuer.jwksUrl, issuer: issuer.issuer, audience: issuer.audience });
    deps = await openTestDependencies(mode, { JWKS_URL: issuer.jwksUrl, IDENTITY_URL: identity.url }, [credentialsConfig]);
    // No sso here: the test answers for its revocations (none), as the issuer does for its keys.
    await answerRevocationsAsSso(deps.bus);
    app = await buildServiceApp(credentialsService, deps);
    admin = await issuer.mint(randomUUID(), ['admin']);
    system = await issuer.mint(randomUUID(), ['system']);
    platform = await issuer.mint('service:sso', ['system']);
  });
  afterAll(async () => {
    await app?.close();
    await identity?.close();
    await deps?.dispose();
    await issuer?.close();
  });

  describe('creating', () => {
    it('answers 401 without a token and 403 to anyone but an admin or a system token', async () => {
      const ada = await anIdentity();
      expect((await call('POST', '/api/v1/credentials', { body: {} })).status).toBe(401);
      expect((await create({ identity_id: ada.id, provider: 'LOCAL', secret: PASSWORD }, ada.token)).status).toBe(403);
    });

    it.each([
      [{ provider: 'LOCAL' }, 'secret', 'Rule "LOCAL needs secret": a LOCAL credential must have a secret.'],
      [{ provider: 'LOCAL', secret: PASSWORD, subject: 'x' }, 'subject', 'Rule "LOCAL forbids subject": a LOCAL credential has no subject.'],
      [{ provider: 'LOCAL', secret: 'short' }, 'secret', 'Rule "LOCAL password length": a password has 8 to 1024 characters.'],
      [{ provider: 'GOOGLE' }, 'subject', 'Rule "GOOGLE needs subject": send the account id the provider gives as subject.'],
      [{ provider: 'GITHUB', subject: '1', secret: 'abc' }, 'secret', 'Rule "GITHUB forbids secret": a GITHUB credential has no secret; send subject only.'],
      [{ provider: 'GOOGLE', subject: '1', type: 'PASSWORD' }, 'type', 'Rule "type follows provider": a GOOGLE credential has type OAUTH.'],
      [{ provider: 'API_KEY', secret: newKey().slice(0, 31) }, 'secret', 'Rule "API_KEY secret length": an API key secret has 32 to 256 characters.'],
      [{ provider: 'API_KEY', secret: 'a'.repeat(40) }, 'secret', expect.stringContaining('Rule "API_KEY secret is random"')],
    ])('answers 400 naming the broken provider rule for %j', async (fields, path, message) => {
      const reply = await create({ identity_id: randomUUID(), ...fields });
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ code: 'PLATFORM_VALIDATION_FAILED', errors: [{ path: `body.${path}`, message }] });
    });

    it('answers 422 CREDENTIALS_IDENTITY_NOT_FOUND when identity does not know the identity', async () => {
      const reply = await create({ identity_id: randomUUID(), provider: 'LOCAL', secret: PASSWORD });
      expect([reply.status, reply.body!.code]).toEqual([422, 'CREDENTIALS_IDENTITY_NOT_FOUND']);
    });

    it('creates one LOCAL password per identity: 201 with the record only (no secret), a strong ETag and its Location; then 422', async () => {
      const ada = await anIdentity();
      const reply = await create({ identity_id: ada.id, provider: 'LOCAL', secret: PASSWORD });
      expect(reply.status).toBe(201);
      expect(reply.body).toEqual([
        {
          id: expect.any(String),
          identity_id: ada.id,
          provider: 'LOCAL',
          type: 'PASSWORD',
          subject: null,
          activated: true,
          lastUsedAt: null,
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      ]);
      expect(reply.text).not.toContain(PASSWORD);
      expect(reply.headers.etag).toMatch(STRONG_TAG);
      expect(reply.headers.location).toBe(`/api/v1/credentials/${reply.body![0].id}`);
      const again = await create({ identity_id: ada.id, provider: 'LOCAL', secret: 'another long password' }, system);
      expect([again.status, again.body!.code]).toEqual([422, 'CREDENTIALS_LOCAL_EXISTS']);
    });

    it('takes each federated subject once per provider (422 CREDENTIALS_SUBJECT_TAKEN), and the same subject at another provider', async () => {
      const [ada, bob] = [await anIdentity(), await anIdentity()];
      const subject = `g-${randomUUID()}`;
      const google = await create({ identity_id: ada.id, provider: 'GOOGLE', subject });
      expect([google.status, google.body![0].type]).toEqual([201, 'OAUTH']);
      expect((await create({ identity_id: bob.id, provider: 'GOOGLE', subject })).body).toMatchObject({ status: 422, code: 'CREDENTIALS_SUBJECT_TAKEN' });
      expect((await create({ identity_id: bob.id, provider: 'GITHUB', subject })).status).toBe(201);
    });

    it('answers 422 CREDENTIALS_CONFLICT for an API key another credential has, naming nobody', async () => {
      const [ada, bob] = [await anIdentity(), await anIdentity()];
      const secret = newKey();
      expect((await create({ identity_id: bob.id, provider: 'API_KEY', secret })).status).toBe(201);
      const again = await create({ identity_id: ada.id, provider: 'API_KEY', secret }, system);
      expect([again.status, again.body!.code, again.body!.detail]).toEqual([422, 'CREDENTIALS_CONFLICT', 'The credential conflicts with an existing one.']);
      expect(again.text).not.toContain(bob.id);
    });

    it('refuses a system token a credential for an identity holding a role it lacks (403)', async () => {
      const promoted = await anIdentity(['admin']);
      expect((await create({ identity_id: promoted.id, provider: 'API_KEY', secret: newKey() }, system)).status).toBe(403);
      expect((await create({ identity_id: promoted.id, provider: 'API_KEY', secret: newKey() }, admin)).status).toBe(201);
    });
  });

  describe('verifying (internal routes)', () => {
    it('verifies a password by email in any case or by identity; valid: false alike for a wrong password or an unknown caller', async () => {
      const ada = await anIdentity();
      const local = (await create({ identity_id: ada.id, provider: 'LOCAL', secret: PASSWORD })).body![0];
      const verified = { valid: true, identityId: ada.id, credentialId: local.id };
      expect((await internal(credentialsApi.methods.verifyPassword.path, { email: ada.email.toUpperCase(), password: PASSWORD })).body).toEqual(verified);
      expect((await internal(credentialsApi.methods.verifyPassword.path, { identityId: ada.id, password: PASSWORD })).body).toEqual(verified);
      expect((await call('GET', `/api/v1/credentials/${local.id}`, { token: admin })).body![0].lastUsedAt).not.toBeNull();
      for (const body of [
        { email: ada.email, password: 'wrong password' },
        { email: `nobody-${randomUUID()}@example.com`, password: PASSWORD },
        { identityId: randomUUID(), password: PASSWORD },
      ]) {
        expect(await internal(credentialsApi.methods.verifyPassword.path, body)).toMatchObject({ status: 200, body: { valid: false } });
      }
    });

    it('resolves an API key to its identity and roles, and rejects a tampered, unknown or deactivated key', async () => {
      const bob = await anIdentity(['billing.read']);
      const apiKey = newKey();
      const { id } = (await create({ identity_id: bob.id, provider: 'API_KEY', secret: apiKey })).body![0];
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey })).body).toEqual({ valid: true, identityId: bob.id, credentialId: id, roles: ['billing.read'] });
      const tampered = `${apiKey.slice(0, -1)}${apiKey.endsWith('A') ? 'B' : 'A'}`;
      for (const candidate of [tampered, apiKey.slice(0, -1), apiKey.toUpperCase(), 'not a key', '']) {
        expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: candidate })).body).toEqual({ valid: false });
      }
      expect((await call('PUT', `/api/v1/credentials/${id}`, { token: admin, body: { activated: false } })).status).toBe(200);
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey })).body).toEqual({ valid: false });
    });

    it('answers the platform\'s own service token only: 403 to admins, system identities and users, 401 without a token', async () => {
      const ada = await anIdentity();
      const body = { identityId: ada.id, password: PASSWORD };
      for (const token of [admin, system, ada.token]) expect((await internal(credentialsApi.methods.verifyPassword.path, body, token)).status).toBe(403);
      expect((await call('POST', credentialsApi.methods.verifyPassword.path, { body })).status).toBe(401);
    });
  });

  describe('reading, changing and revoking', () => {
    it('lets the owner, an admin and a system token read a credential; 403 to anyone else, 404 for an unknown id, 304 to its tag', async () => {
      const [ada, bob] = [await anIdentity(), await anIdentity()];
      const created = await create({ identity_id: ada.id, provider: 'GITHUB', subject: `gh-${randomUUID()}` });
      const { id } = created.body![0];
      for (const token of [ada.token, admin, system]) {
        const reply = await call('GET', `/api/v1/credentials/${id}`, { token });
        expect([reply.status, reply.body, reply.headers.etag]).toEqual([200, created.body, created.headers.etag]);
      }
      expect((await call('GET', `/api/v1/credentials/${id}`, { token: bob.token })).status).toBe(403);
      expect((await call('GET', `/api/v1/credentials/${randomUUID()}`, { token: admin })).status).toBe(404);
      const notModified = await call('GET', `/api/v1/credentials/${id}`, { token: admin, headers: { 'if-none-match': String(created.headers.etag) } });
      expect([notModified.status, notModified.text]).toEqual([304, '']);
    });

    it('lists an identity\'s own credentials, pages with a Link header and an exact count, and answers 400 to an unknown provider', async () => {
      const [ada, bob] = [await anIdentity(), await anIdentity()];
      for (let i = 0; i < 3; i++) await create({ identity_id: ada.id, provider: 'GITHUB', subject: `gh-${randomUUID()}` });
      expect((await call('GET', '/api/v1/credentials', { token: ada.token })).body!.map((c: { identity_id: string }) => c.identity_id)).toEqual([ada.id, ada.id, ada.id]);
      expect((await call('GET', `/api/v1/credentials?identity_id=${bob.id}`, { token: ada.token })).status).toBe(403);
      const page = await call('GET', `/api/v1/credentials?identity_id=${ada.id}&limit=2&sort=createdAt`, { token: admin, headers: { prefer: 'count=exact' } });
      expect(page.body).toHaveLength(2);
      expect(page.headers['content-range']).toBe('0-1/3');
      expect(page.headers.link).toContain('rel="next"');
      expect((await call('GET', '/api/v1/credentials?provider=SAML', { token: admin })).status).toBe(400);
    });

    it('pages by cursor: every credential that stayed exactly once, sorted on a field that is null, across creates and deletes between pages', async () => {
      const ada = await anIdentity();
      const github = () => create({ identity_id: ada.id, provider: 'GITHUB', subject: `gh-${randomUUID()}` }).then((reply) => reply.body![0].id as string);
      const before: string[] = [];
      for (let i = 0; i < 6; i++) before.push(await github());
      const nextOf = (link: unknown) => /<([^>]+)>; rel="next"/.exec(String(link ?? ''))?.[1];
      const seen: string[] = [];
      const deleted = new Set<string>();
      let page = await call('GET', `/api/v1/credentials?identity_id=${ada.id}&sort=lastUsedAt&limit=2`, { token: admin });
      for (let step = 0; ; step++) {
        expect(page.status).toBe(200);
        seen.push(...page.body!.map((credential: { id: string }) => credential.id));
        const next = nextOf(page.headers.link);
        if (!next) break;
        if (step < 2) {
          await github();
          const victim = before.find((id) => !deleted.has(id) && !seen.includes(id))!;
          expect((await call('DELETE', `/api/v1/credentials/${victim}`, { token: admin })).status).toBe(204);
          deleted.add(victim);
        }
        page = await call('GET', next, { token: admin });
      }
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toEqual(expect.arrayContaining(before.filter((id) => !deleted.has(id))));
      expect(seen.filter((id) => deleted.has(id))).toEqual([]);

      const first = await call('GET', `/api/v1/credentials?identity_id=${ada.id}&sort=-lastUsedAt&limit=2`, { token: admin, headers: { prefer: 'count=estimated' } });
      const exact = await call('GET', `/api/v1/credentials?identity_id=${ada.id}&sort=-lastUsedAt&limit=2`, { token: admin, headers: { prefer: 'count=exact' } });
      expect(first.headers['content-range']).toBe(exact.headers['content-range']);
      expect(first.headers['content-range']).toMatch(/^0-1\/\d+$/);
      expect(first.headers['preference-applied']).toBe('count=estimated');
      const cursor = new URLSearchParams(nextOf(first.headers.link)!.split('?')[1]).get('cursor');
      const foreign = await call('GET', `/api/v1/credentials?identity_id=${randomUUID()}&sort=-lastUsedAt&cursor=${cursor}`, { token: admin });
      expect([foreign.status, foreign.body!.errors.map((error: { path: string }) => error.path)]).toEqual([400, ['query.cursor']]);
    });

    it('applies the provider rules to updates, and lets only an admin change activated', async () => {
      const ada = await anIdentity();
      const google = (await create({ identity_id: ada.id, provider: 'GOOGLE', subject: `g-${randomUUID()}` })).body![0];
      const secret = await call('PUT', `/api/v1/credentials/${google.id}`, { token: admin, body: { secret: 'hunter22' } });
      expect([secret.status, secret.body!.errors]).toEqual([400, [{ path: 'body.secret', message: 'Rule "GOOGLE forbids secret": a GOOGLE credential has no secret; send subject only.' }]]);
      const byOwner = await call('PUT', `/api/v1/credentials/${google.id}`, { token: ada.token, body: { activated: false } });
      expect([byOwner.status, byOwner.body!.code]).toEqual([403, 'CREDENTIALS_ACTIVATION_FORBIDDEN']);
      expect((await call('PUT', `/api/v1/credentials/${google.id}`, { token: admin, body: { activated: false } })).body![0].activated).toBe(false);
    });

    it('answers 412 to a stale If-Match on PUT and DELETE, changing and revoking nothing, and revokes with the current tag', async () => {
      const ada = await anIdentity();
      const created = await create({ identity_id: ada.id, provider: 'GITHUB', subject: `gh-${randomUUID()}` });
      const { id } = created.body![0];
      const stale = String(created.headers.etag);
      const changed = await call('PUT', `/api/v1/credentials/${id}`, { token: admin, body: { activated: false } });
      expect(changed.headers.etag).not.toBe(stale);
      expect((await call('PUT', `/api/v1/credentials/${id}`, { token: admin, headers: { 'if-match': stale }, body: { activated: true } })).body).toMatchObject({
        status: 412,
        code: 'PLATFORM_PRECONDITION_FAILED',
      });
      expect((await call('DELETE', `/api/v1/credentials/${id}`, { token: admin, headers: { 'if-match': stale } })).status).toBe(412);
      expect((await call('GET', `/api/v1/credentials/${id}`, { token: admin })).body![0].activated).toBe(false);
      const revoked = await call('DELETE', `/api/v1/credentials/${id}`, { token: ada.token, headers: { 'if-match': String(changed.headers.etag) } });
      expect([revoked.status, revoked.text]).toEqual([204, '']);
      expect((await call('GET', `/api/v1/credentials/${id}`, { token: admin })).status).toBe(404);
      expect((await call('DELETE', `/api/v1/credentials/${id}`, { token: admin })).status).toBe(404);
    });

    it('lets the owner replace an API key: the old one stops working, the new one works', async () => {
      const bob = await anIdentity();
      const first = newKey();
      const { id } = (await create({ identity_id: bob.id, provider: 'API_KEY', secret: first })).body![0];
      const second = newKey();
      const replaced = await call('PUT', `/api/v1/credentials/${id}`, { token: bob.token, body: { secret: second } });
      expect(replaced.status).toBe(200);
      expect(replaced.text).not.toContain(second);
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: first })).body).toEqual({ valid: false });
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: second })).body).toMatchObject({ valid: true, credentialId: id });
    });
  });
});
