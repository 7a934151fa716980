import { spawnSync } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { credentialEventSchema, credentialsApi } from '@app/contracts';
import { credentialsService } from '@app/credentials';
import { buildServiceApp } from '@app/platform';
import { freePort, SETTLE_BUDGET_MS } from '@app/testing';
import { CASES, startHarness, type Harness } from './harness.js';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'Tr0ub4dor&3-but-longer';
/** An API key as a client makes one: 32 random bytes, base64url (43 characters). */
const newKey = () => randomBytes(32).toString('base64url');

describe.each(CASES)('credentials service through the platform\'s edge (%s, %s)', (topology, mode) => {
  let h: Harness;
  let admin: string;
  let system: string;
  /** sso's own service token: the only caller internal routes answer. */
  let platform: string;
  let ada: { id: string; token: string };
  let bob: { id: string; token: string };
  /** Every secret this suite sends or receives, scanned for at the end. */
  const secrets = new Set<string>([PASSWORD, NEW_PASSWORD]);
  const key = (value = newKey()) => (secrets.add(value), value);

  const register = async (name: string, email: string) => {
    const reply = await h.call('POST', '/api/v1/identity', { body: { name, email } });
    return { id: reply.body[0].id as string, token: await h.issuer.mint(reply.body[0].id) };
  };
  const create = (body: Record<string, unknown>, token = admin, headers: Record<string, string> = {}) =>
    h.call('POST', '/api/v1/credentials', { token, body, headers });
  /** Internal routes are served by credentials running alone (split mode: an app of its own in this process, or its first replica), not at the edge. */
  const internal = (path: string, body: unknown, token = platform) =>
    h.call('POST', path, { body, token, base: h.standalone.credentials });

  beforeAll(async () => {
    h = await startHarness(mode, topology);
    admin = await h.issuer.mint(randomUUID(), ['admin']);
    system = await h.issuer.mint(randomUUID(), ['system']);
    platform = await h.issuer.mint('service:sso', ['system']);
    ada = await register('Ada', 'ada@example.com');
    bob = await register('Bob', 'bob@example.com');
  });
  afterAll(() => h.close());

  describe('POST /api/v1/credentials', () => {
    it('answers 401 without a token and 403 to anyone but an admin or a system token', async () => {
      expect((await h.call('POST', '/api/v1/credentials', { body: {} })).status).toBe(401);
      const byUser = await create({ identity_id: ada.id, provider: 'LOCAL', secret: PASSWORD }, ada.token);
      expect(byUser.status).toBe(403);
    });

    it.each([
      [{ provider: 'LOCAL' }, 'secret', 'Rule "LOCAL needs secret": a LOCAL credential must have a secret.'],
      [{ provider: 'LOCAL', secret: PASSWORD, subject: 'x' }, 'subject', 'Rule "LOCAL forbids subject": a LOCAL credential has no subject.'],
      [{ provider: 'LOCAL', secret: 'short' }, 'secret', 'Rule "LOCAL password length": a password has 8 to 1024 characters.'],
      [{ provider: 'GOOGLE' }, 'subject', 'Rule "GOOGLE needs subject": send the account id the provider gives as subject.'],
      [{ provider: 'GITHUB', subject: '1', secret: 'abc' }, 'secret', 'Rule "GITHUB forbids secret": a GITHUB credential has no secret; send subject only.'],
      [{ provider: 'GOOGLE', subject: '1', type: 'PASSWORD' }, 'type', 'Rule "type follows provider": a GOOGLE credential has type OAUTH.'],
      [{ provider: 'API_KEY' }, 'secret', 'Rule "API_KEY needs secret": a API_KEY credential must have a secret.'],
      [{ provider: 'API_KEY', secret: newKey().slice(0, 31) }, 'secret', 'Rule "API_KEY secret length": an API key secret has 32 to 256 characters.'],
      [{ provider: 'API_KEY', secret: newKey().repeat(6).slice(0, 257) }, 'secret', 'Rule "API_KEY secret length": an API key secret has 32 to 256 characters.'],
      [{ provider: 'API_KEY', secret: 'a'.repeat(40) }, 'secret', expect.stringContaining('Rule "API_KEY secret is random"')],
      [{ provider: 'API_KEY', secret: 'Xq7_Lm2-Pz9kWb4R'.repeat(2) }, 'secret', expect.stringContaining('Rule "API_KEY secret is random"')],
      [{ provider: 'API_KEY', secret: 'abcdefghijklmnopqrstuvwxyz0123456789' }, 'secret', expect.stringContaining('Rule "API_KEY secret is random"')],
      [{ provider: 'API_KEY', secret: `${newKey()} +/=` }, 'secret', expect.stringContaining('Rule "API_KEY secret is random"')],
    ])('answers 400 naming the broken provider rule for %j', async (fields, path, message) => {
      const reply = await create({ identity_id: ada.id, ...fields });
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ code: 'PLATFORM_VALIDATION_FAILED', errors: [{ path: `body.${path}`, message }] });
    });

    it('words the rule in the caller\'s language', async () => {
      const reply = await create({ identity_id: ada.id, provider: 'LOCAL' }, admin, { 'accept-language': 'pt-BR' });
      expect(reply.body.errors[0].message).toBe('Regra "LOCAL exige secret": uma credencial LOCAL precisa de um secret.');
      const short = await create({ identity_id: ada.id, provider: 'API_KEY', secret: 'too-short' }, admin, { 'accept-language': 'de' });
      expect(short.headers.get('content-type')).toContain('application/problem+json');
      expect(short.body.errors).toEqual([{ path: 'body.secret', message: 'Regel „Länge des API_KEY-secret“: ein API-Schlüssel-secret hat 32 bis 256 Zeichen.' }]);
    });

    it('answers 422 when the identity does not exist', async () => {
      const reply = await create({ identity_id: randomUUID(), provider: 'LOCAL', secret: PASSWORD });
      expect(reply.status).toBe(422);
      expect(reply.body.code).toBe('CREDENTIALS_IDENTITY_NOT_FOUND');
    });

    it('creates a LOCAL credential with type PASSWORD and no secret in the answer, once per identity', async () => {
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
      const event = await h.event((e) => e.subject === 'credential.created' && (e.data as { credentialId: string }).credentialId === reply.body[0].id);
      expect(credentialEventSchema.strict().parse(event.data)).toMatchObject({ identityId: ada.id, provider: 'LOCAL', type: 'PASSWORD' });
      const again = await create({ identity_id: ada.id, provider: 'LOCAL', secret: NEW_PASSWORD }, system);
      expect(again.status).toBe(422);
      expect(again.body.code).toBe('CREDENTIALS_LOCAL_EXISTS');
    });

    it('creates GOOGLE and GITHUB credentials of type OAUTH, each subject once per provider', async () => {
      const google = await create({ identity_id: ada.id, provider: 'GOOGLE', subject: '1234567890' });
      expect(google.status).toBe(201);
      expect(google.body[0]).toMatchObject({ provider: 'GOOGLE', type: 'OAUTH', subject: '1234567890' });
      expect((await create({ identity_id: bob.id, provider: 'GOOGLE', subject: '1234567890' })).body.code).toBe('CREDENTIALS_SUBJECT_TAKEN');
      expect((await create({ identity_id: bob.id, provider: 'GITHUB', subject: '1234567890' })).status).toBe(201);
    });

    it('refuses a system token a credential for an identity holding a role it lacks: system is never a step to admin', async () => {
      const carol = await register('Carol', `carol-${randomUUID().slice(0, 8)}@example.com`);
      const promoted = await h.call('PUT', `/api/v1/identity/${carol.id}`, { token: admin, body: { name: 'Carol', email: `carol-${randomUUID().slice(0, 8)}@example.com`, roles: ['admin'] } });
      expect(promoted.status).toBe(200);
      for (const body of [
        { identity_id: carol.id, provider: 'API_KEY', secret: key() },
        { identity_id: carol.id, provider: 'LOCAL', secret: key() },
        { identity_id: carol.id, provider: 'GOOGLE', subject: `g-${randomUUID()}` },
      ]) {
        const reply = await create(body, system);
        expect(reply.status).toBe(403);
      }
      expect((await h.call('GET', `/api/v1/credentials?identity_id=${carol.id}`, { token: admin })).body).toEqual([]);
      // An admin may (and takes it back, so later counts hold).
      const byAdmin = await create({ identity_id: carol.id, provider: 'API_KEY', secret: key() }, admin);
      expect(byAdmin.status).toBe(201);
      expect((await h.call('DELETE', `/api/v1/credentials/${byAdmin.body[0].id}`, { token: admin })).status).toBe(204);
    });

    it('stores the client\'s API key (a system token may create one) and answers the record only: no key, no hash', async () => {
      const secret = key();
      const reply = await create({ identity_id: bob.id, provider: 'API_KEY', secret }, system);
      expect(reply.status).toBe(201);
      expect(reply.body).toEqual([
        {
          id: expect.any(String),
          identity_id: bob.id,
          provider: 'API_KEY',
          type: 'API_KEY',
          subject: null,
          activated: true,
          lastUsedAt: null,
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      ]);
      // The secret is the key: exactly what the client sends later resolves to the credential, here
      // on another replica (split mode's credentials on the same database: one server key for both).
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: secret })).body).toMatchObject({ valid: true, credentialId: reply.body[0].id });
      const [row] = await h.deps.database.query<{ key_hash: string; secret_hash: string | null; key_prefix: string | null }>(
        'select key_hash, secret_hash, key_prefix from "credentials"."credential" where id = $1',
        [reply.body[0].id],
      );
      expect(row).toEqual({ key_hash: expect.stringMatching(/^[0-9a-f]{64}$/), secret_hash: null, key_prefix: null });
      // Keyed: not the plain SHA-256 of the secret, which anyone holding the table could test guesses against.
      expect(row!.key_hash).not.toBe(createHash('sha256').update(secret).digest('hex'));
    });

    it('answers 422 "taken" for a secret another API key has, saying nothing more', async () => {
      const secret = key();
      expect((await create({ identity_id: bob.id, provider: 'API_KEY', secret })).status).toBe(201);
      const again = await create({ identity_id: ada.id, provider: 'API_KEY', secret }, system);
      expect([again.status, again.body.code, again.body.detail]).toEqual([422, 'CREDENTIALS_CONFLICT', 'The credential conflicts with an existing one.']);
      expect(again.text).not.toContain(bob.id);
    });
  });

  describe('reads, updates and revocation', () => {
    let local: string;
    beforeAll(async () => {
      local = (await h.call('GET', `/api/v1/credentials?identity_id=${ada.id}&provider=LOCAL`, { token: admin })).body[0].id;
    });

    it('lets the owning identity, an admin and a system token read a credential; anyone else gets 403', async () => {
      for (const token of [ada.token, admin, system]) {
        const reply = await h.call('GET', `/api/v1/credentials/${local}`, { token });
        expect(reply.status).toBe(200);
        expect(reply.body).toEqual([expect.objectContaining({ id: local, identity_id: ada.id })]);
      }
      expect((await h.call('GET', `/api/v1/credentials/${local}`, { token: bob.token })).status).toBe(403);
      expect((await h.call('GET', `/api/v1/credentials/${randomUUID()}`, { token: admin })).status).toBe(404);
      expect((await h.call('GET', `/api/v1/credentials/${local}`)).status).toBe(401);
    });

    it('lists an identity\'s own credentials, everyone\'s for an admin, with paging and filters', async () => {
      const own = await h.call('GET', '/api/v1/credentials', { token: ada.token });
      expect(own.body.map((c: { identity_id: string }) => c.identity_id)).toEqual([ada.id, ada.id]);
      expect((await h.call('GET', `/api/v1/credentials?identity_id=${bob.id}`, { token: ada.token })).status).toBe(403);
      const page = await h.call('GET', '/api/v1/credentials?limit=2&sort=createdAt', { token: admin, headers: { prefer: 'count=exact' } });
      expect(page.body).toHaveLength(2);
      expect(page.headers.get('content-range')).toBe('0-1/5');
      expect(page.headers.get('link')).toContain('rel="next"');
      const keys = await h.call('GET', '/api/v1/credentials?provider=API_KEY', { token: system });
      expect(keys.body).toHaveLength(2);
      expect((await h.call('GET', '/api/v1/credentials?provider=SAML', { token: admin })).status).toBe(400);
    });

    it('filters with PostgREST operators, and keeps a non-admin to its own credentials whatever it asks', async () => {
      const providers = async (query: string, token = admin) => {
        const reply = await h.call('GET', `/api/v1/credentials?${query}&sort=provider`, { token });
        expect(reply.status).toBe(200);
        return reply.body.map((c: { provider: string }) => c.provider);
      };
      const adas = await providers(`identity_id=${ada.id}`);
      expect(adas).toHaveLength(2);
      expect(await providers(`identity_id=eq.${ada.id}&provider=in.(${adas.join(',')})`)).toEqual(adas);
      expect(await providers(`identity_id=eq.${ada.id}&provider=neq.${adas[0]}`)).toEqual(adas.slice(1));
      expect(await providers('provider=not.in.(LOCAL,GOOGLE,GITHUB)')).toEqual(['API_KEY', 'API_KEY']);
      expect(await providers('provider=API_KEY&lastUsedAt=is.null&createdAt=lt.2000-01-01T00:00:00Z')).toEqual([]);
      expect(await providers(`identity_id=neq.${ada.id}`, ada.token)).toEqual([]);
      expect((await h.call('GET', `/api/v1/credentials?identity_id=in.(${ada.id},${bob.id})`, { token: ada.token })).status).toBe(403);
      const wrong = await h.call('GET', '/api/v1/credentials?provider=like.LOC*', { token: admin });
      expect(wrong.status).toBe(400);
      expect(wrong.body.errors).toEqual([
        { path: 'query.provider', message: 'The operator "like" does not apply to this field; use one of eq, neq, in, is, e.g. in.(LOCAL,API_KEY).' },
      ]);
      const notAnId = await h.call('GET', '/api/v1/credentials?identity_id=in.(1,2)', { token: admin });
      expect(notAnId.status).toBe(400);
      expect(notAnId.body.errors).toEqual([{ path: 'query.identity_id', message: 'Invalid UUID' }]);
    });

    it('lets the owner set a new password: rehashed, credential.updated with secretChanged, the old one no longer valid', async () => {
      const reply = await h.call('PUT', `/api/v1/credentials/${local}`, { token: ada.token, body: { secret: NEW_PASSWORD } });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual([expect.objectContaining({ id: local, provider: 'LOCAL', type: 'PASSWORD' })]);
      const event = await h.event((e) => e.subject === 'credential.updated' && (e.data as { credentialId: string }).credentialId === local);
      expect(credentialEventSchema.strict().parse(event.data).secretChanged).toBe(true);
      expect((await internal(credentialsApi.methods.verifyPassword.path, { email: 'ada@example.com', password: PASSWORD })).body).toEqual({ valid: false });
      expect((await internal(credentialsApi.methods.verifyPassword.path, { email: 'ada@example.com', password: NEW_PASSWORD })).body).toEqual({
        valid: true,
        identityId: ada.id,
        credentialId: local,
      });
    });

    it('applies the provider rules to updates', async () => {
      const google = (await h.call('GET', '/api/v1/credentials?provider=GOOGLE', { token: admin })).body[0].id;
      const forbiddenSecret = await h.call('PUT', `/api/v1/credentials/${google}`, { token: admin, body: { secret: 'hunter22' } });
      expect(forbiddenSecret.status).toBe(400);
      expect(forbiddenSecret.body.errors).toEqual([{ path: 'body.secret', message: 'Rule "GOOGLE forbids secret": a GOOGLE credential has no secret; send subject only.' }]);
      const forbiddenSubject = await h.call('PUT', `/api/v1/credentials/${local}`, { token: admin, body: { subject: 'x' } });
      expect(forbiddenSubject.body.errors[0].path).toBe('body.subject');
      expect((await h.call('PUT', `/api/v1/credentials/${local}`, { token: admin, body: { provider: 'GOOGLE' } })).status).toBe(400);
      expect((await h.call('PUT', `/api/v1/credentials/${local}`, { token: bob.token, body: { activated: false } })).status).toBe(403);
    });

    it('lets only an admin change activated: the owner cannot reactivate what an admin deactivated (403, unchanged), nor can a system token', async () => {
      const apiKey = (await h.call('GET', `/api/v1/credentials?identity_id=${bob.id}&provider=API_KEY`, { token: admin })).body[0].id;
      expect((await h.call('PUT', `/api/v1/credentials/${apiKey}`, { token: admin, body: { activated: false } })).body[0].activated).toBe(false);
      for (const token of [bob.token, system]) {
        const reply = await h.call('PUT', `/api/v1/credentials/${apiKey}`, { token, body: { activated: true }, headers: { 'accept-language': 'es' } });
        expect(reply.status).toBe(403);
        expect(reply.body).toMatchObject({ code: 'CREDENTIALS_ACTIVATION_FORBIDDEN', detail: 'Solo un administrador puede activar o desactivar una credencial.' });
      }
      const ownerDeactivates = await h.call('PUT', `/api/v1/credentials/${local}`, { token: ada.token, body: { activated: false } });
      expect(ownerDeactivates.status).toBe(403);
      expect((await h.call('GET', `/api/v1/credentials/${apiKey}`, { token: admin })).body[0].activated).toBe(false);
      expect((await h.call('GET', `/api/v1/credentials/${local}`, { token: admin })).body[0].activated).toBe(true);
      expect((await h.call('PUT', `/api/v1/credentials/${apiKey}`, { token: admin, body: { activated: true } })).body[0].activated).toBe(true);
    });

    it('lets the owner replace an API key under the same rules: the old key stops working, the new one works', async () => {
      const [record] = (await h.call('GET', `/api/v1/credentials?identity_id=${bob.id}&provider=API_KEY`, { token: admin })).body;
      const [other] = (await h.call('GET', `/api/v1/credentials?identity_id=${bob.id}&provider=API_KEY&offset=1`, { token: admin })).body;
      const put = (body: unknown, id = record.id) => h.call('PUT', `/api/v1/credentials/${id}`, { token: bob.token, body });
      expect((await put({ secret: 'short' })).body.errors).toEqual([{ path: 'body.secret', message: 'Rule "API_KEY secret length": an API key secret has 32 to 256 characters.' }]);
      expect((await put({ secret: '0123456789abcdefghijklmnopqrstuvwxyz' })).body.errors[0].message).toContain('Rule "API_KEY secret is random"');
      const first = key();
      expect((await put({ secret: first })).status).toBe(200);
      const second = key();
      const replaced = await put({ secret: second });
      expect(replaced.status).toBe(200);
      expect(replaced.body).toEqual([expect.not.objectContaining({ apiKey: expect.anything() })]);
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: first })).body).toEqual({ valid: false });
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: second })).body).toMatchObject({ valid: true, credentialId: record.id });
      const taken = await put({ secret: second }, other.id);
      expect([taken.status, taken.body.code]).toEqual([422, 'CREDENTIALS_CONFLICT']);
      const event = await h.event(
        (e) => e.subject === 'credential.updated' && (e.data as { credentialId: string; secretChanged?: boolean }).credentialId === record.id && (e.data as { secretChanged?: boolean }).secretChanged === true,
      );
      expect(credentialEventSchema.strict().parse(event.data)).toMatchObject({ identityId: bob.id, provider: 'API_KEY', secretChanged: true });
    });

    it('revokes: 403 to another identity, 204 to the owner, then 404, and publishes credential.revoked', async () => {
      const github = (await h.call('GET', '/api/v1/credentials?provider=GITHUB', { token: admin })).body[0];
      expect((await h.call('DELETE', `/api/v1/credentials/${github.id}`, { token: ada.token })).status).toBe(403);
      const reply = await h.call('DELETE', `/api/v1/credentials/${github.id}`, { token: bob.token });
      expect(reply.status).toBe(204);
      expect(reply.text).toBe('');
      expect((await h.call('GET', `/api/v1/credentials/${github.id}`, { token: admin })).status).toBe(404);
      expect((await h.call('DELETE', `/api/v1/credentials/${github.id}`, { token: admin })).status).toBe(404);
      const event = await h.event((e) => e.subject === 'credential.revoked' && (e.data as { credentialId: string }).credentialId === github.id);
      expect(credentialEventSchema.strict().parse(event.data)).toMatchObject({ identityId: bob.id, provider: 'GITHUB' });
    });
  });

  describe('internal verifications', () => {
    it('verifies a password by email in any case or by identity, and records lastUsedAt', async () => {
      const readLocal = async () => (await h.call('GET', `/api/v1/credentials?identity_id=${ada.id}&provider=LOCAL`, { token: admin })).body[0];
      const local = await readLocal();
      // The credential that matched: sso remembers it per sign-in, to end those sessions with it.
      const verified = { valid: true, identityId: ada.id, credentialId: local.id };
      expect((await internal(credentialsApi.methods.verifyPassword.path, { email: 'ADA@example.com', password: NEW_PASSWORD })).body).toEqual(verified);
      expect((await internal(credentialsApi.methods.verifyPassword.path, { identityId: ada.id, password: NEW_PASSWORD })).body).toEqual(verified);
      expect(Date.parse((await readLocal()).lastUsedAt)).toBeGreaterThan(Date.now() - 60_000);
    });

    it('answers valid: false alike for a wrong password, an unknown email or identity, and one without a password', async () => {
      for (const body of [
        { email: 'ada@example.com', password: 'wrong password' },
        { email: 'nobody@example.com', password: NEW_PASSWORD },
        { identityId: randomUUID(), password: NEW_PASSWORD },
        { identityId: bob.id, password: NEW_PASSWORD },
      ]) {
        const reply = await internal(credentialsApi.methods.verifyPassword.path, body);
        expect([reply.status, reply.body]).toEqual([200, { valid: false }]);
      }
    });

    it('refuses admins and users (403) and anonymous callers (401), and is not served at the edge', async () => {
      const body = { email: 'ada@example.com', password: NEW_PASSWORD };
      expect((await internal(credentialsApi.methods.verifyPassword.path, body, admin)).status).toBe(403);
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: 'ak_x' }, ada.token)).status).toBe(403);
      // An identity an admin made `system` is still an identity: internal routes answer only the platform's services.
      expect((await internal(credentialsApi.methods.verifyPassword.path, body, system)).status).toBe(403);
      expect((await internal(credentialsApi.methods.createLocalPassword.path, { identityId: bob.id, password: 'a password long enough' }, system)).status).toBe(403);
      expect((await h.call('POST', credentialsApi.methods.verifyPassword.path, { body, base: h.standalone.credentials })).status).toBe(401);
      // The edge (the all-in-one, or the gateway in front of the replicas) answers /internal: a token first, then no such route.
      for (const path of [credentialsApi.methods.verifyPassword.path, credentialsApi.methods.verifyApiKey.path]) {
        expect((await h.call('POST', path, { body })).status).toBe(401);
        expect((await h.call('POST', path, { body, token: system })).status).toBe(404);
      }
    });

    it('resolves an API key to its identity and roles, records lastUsedAt, and rejects a tampered or unknown key', async () => {
      await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: admin, body: { roles: ['billing.read'] } });
      const apiKey = key();
      const created = await create({ identity_id: bob.id, provider: 'API_KEY', secret: apiKey });
      const { id } = created.body[0];
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey })).body).toEqual({ valid: true, identityId: bob.id, credentialId: id, roles: ['billing.read'] });
      expect((await h.call('GET', `/api/v1/credentials/${id}`, { token: admin })).body[0].lastUsedAt).not.toBeNull();
      const tampered = `${apiKey.slice(0, -1)}${apiKey.endsWith('A') ? 'B' : 'A'}`;
      for (const candidate of [tampered, apiKey.slice(0, -1), `${apiKey} `, apiKey.toUpperCase(), 'ak_unknownprfx_secret', 'not a key', '']) {
        expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: candidate })).body).toEqual({ valid: false });
      }
      await h.call('PUT', `/api/v1/credentials/${id}`, { token: admin, body: { activated: false } });
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey })).body).toEqual({ valid: false });
    });

    it('keeps a key issued before issue 11 (ak_<prefix>_<secret>, SHA-256) working, and moves it to the keyed hash on first use', async () => {
      const prefix = randomBytes(9).toString('base64url');
      const legacy = key(`ak_${prefix}_${newKey()}`);
      const [inserted] = await h.deps.database.query<{ id: string }>(
        `insert into "credentials"."credential" (identity_id, provider, type, secret_hash, key_prefix) values ($1, 'API_KEY', 'API_KEY', $2, $3) returning id`,
        [bob.id, createHash('sha256').update(legacy).digest('hex'), prefix],
      );
      const id = inserted!.id;
      const stored = async () =>
        (await h.deps.database.query<{ key_hash: string | null; secret_hash: string | null; key_prefix: string | null }>(
          'select key_hash, secret_hash, key_prefix from "credentials"."credential" where id = $1',
          [id],
        ))[0];
      const tampered = `${legacy.slice(0, -1)}${legacy.endsWith('A') ? 'B' : 'A'}`;
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: tampered })).body).toEqual({ valid: false });
      expect(await stored()).toMatchObject({ key_hash: null, key_prefix: prefix });
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: legacy })).body).toMatchObject({ valid: true, credentialId: id });
      expect(await stored()).toEqual({ key_hash: expect.stringMatching(/^[0-9a-f]{64}$/), secret_hash: null, key_prefix: null });
      // Now found by its keyed hash.
      expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: legacy })).body).toMatchObject({ valid: true, credentialId: id });
    });

    it('hashes under API_KEY_HASH_KEY when it is set (keys stored under another key do not match), and refuses a weak one (exit 78)', async () => {
      const apiKey = key();
      expect((await create({ identity_id: bob.id, provider: 'API_KEY', secret: apiKey })).status).toBe(201);
      const configured = await buildServiceApp(credentialsService, {
        ...h.deps,
        logger: h.logger,
        config: { ...h.deps.config, API_KEY_HASH_KEY: randomBytes(32).toString('base64'), IDENTITY_URL: h.standalone.identity },
      });
      try {
        const verify = (candidate: string) =>
          configured.inject({ method: 'POST', url: credentialsApi.methods.verifyApiKey.path, headers: { authorization: `Bearer ${platform}` }, payload: { apiKey: candidate } });
        expect((await verify(apiKey)).json()).toEqual({ valid: false });
        const fresh = key();
        const made = await configured.inject({
          method: 'POST',
          url: '/api/v1/credentials',
          headers: { authorization: `Bearer ${admin}` },
          payload: { identity_id: bob.id, provider: 'API_KEY', secret: fresh },
        });
        h.bodies.push(made.body);
        expect(made.statusCode).toBe(201);
        expect((await verify(fresh)).json()).toMatchObject({ valid: true, credentialId: made.json()[0].id });
        expect((await internal(credentialsApi.methods.verifyApiKey.path, { apiKey: fresh })).body).toEqual({ valid: false });
      } finally {
        await configured.close();
      }
      const main = fileURLToPath(new URL('../../services/credentials/dist/main.js', import.meta.url));
      for (const weak of ['too-short', Buffer.alloc(31, 7).toString('base64'), 'not base64 at all, though long enough!!']) {
        const run = spawnSync(process.execPath, [main], { env: { PATH: process.env.PATH, API_KEY_HASH_KEY: weak, LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: SETTLE_BUDGET_MS });
        expect(run.status).toBe(78);
        expect(run.stderr + run.stdout).toContain('API_KEY_HASH_KEY');
        expect(run.stderr + run.stdout).not.toContain(weak);
      }
    });

    it('rehashes a password on a successful verification when the argon2 costs changed', async () => {
      const hashOf = async () =>
        (await h.deps.database.query<{ secret_hash: string }>(`select secret_hash from "credentials"."credential" where identity_id = $1 and provider = 'LOCAL'`, [ada.id]))[0]!.secret_hash;
      expect(await hashOf()).toContain('m=19456,p=1,t=2$');
      // A second replica of the service, configured with higher costs, on the same database.
      const stronger = await buildServiceApp(credentialsService, {
        ...h.deps,
        logger: h.logger,
        config: { ...h.deps.config, ARGON2_TIME_COST: 3, IDENTITY_URL: h.standalone.identity },
      });
      try {
        const wrong = await stronger.inject({ method: 'POST', url: credentialsApi.methods.verifyPassword.path, headers: { authorization: `Bearer ${platform}` }, payload: { identityId: ada.id, password: 'wrong password' } });
        expect(wrong.json()).toEqual({ valid: false });
        expect(await hashOf()).toContain('t=2$');
        const right = await stronger.inject({ method: 'POST', url: credentialsApi.methods.verifyPassword.path, headers: { authorization: `Bearer ${platform}` }, payload: { identityId: ada.id, password: NEW_PASSWORD } });
        h.bodies.push(right.body, wrong.body);
        expect(right.json()).toEqual({ valid: true, identityId: ada.id, credentialId: expect.any(String) });
        expect(await hashOf()).toContain('m=19456,p=1,t=3$');
        expect((await internal(credentialsApi.methods.verifyPassword.path, { identityId: ada.id, password: NEW_PASSWORD })).body.valid).toBe(true);
      } finally {
        await stronger.close();
      }
    });
  });

  describe('in split mode', () => {
    const createAlone = (body: Record<string, unknown>, token: string) => h.call('POST', '/api/v1/credentials', { token, body, base: h.standalone.credentials });

    it('asks identity over HTTP with the caller\'s own token whether the identity exists', async () => {
      // No sso in this process, so no system token: only the forwarded bearer can have been used.
      const created = await createAlone({ identity_id: bob.id, provider: 'GOOGLE', subject: 'split-mode-subject' }, admin);
      expect(created.status).toBe(201);
      expect(created.body[0]).toMatchObject({ identity_id: bob.id, provider: 'GOOGLE', subject: 'split-mode-subject' });
      const unknown = await createAlone({ identity_id: randomUUID(), provider: 'GOOGLE', subject: 'split-mode-other' }, system);
      expect([unknown.status, unknown.body.code]).toEqual([422, 'CREDENTIALS_IDENTITY_NOT_FOUND']);
    });

    it('answers 503 with Retry-After when identity cannot be asked, creating nothing', async () => {
      const orphan = await buildServiceApp(credentialsService, {
        ...h.deps,
        logger: h.logger,
        config: { ...h.deps.config, IDENTITY_URL: `http://127.0.0.1:${await freePort()}` },
      });
      try {
        const reply = await orphan.inject({
          method: 'POST',
          url: '/api/v1/credentials',
          headers: { authorization: `Bearer ${admin}` },
          payload: { identity_id: ada.id, provider: 'GITHUB', subject: 'never-created' },
        });
        h.bodies.push(reply.body);
        expect([reply.statusCode, reply.json().code, reply.headers['retry-after']]).toEqual([503, 'CREDENTIALS_IDENTITY_UNAVAILABLE', '1']);
        expect((await h.call('GET', '/api/v1/credentials?provider=GITHUB', { token: admin })).body.map((c: { subject: string }) => c.subject)).not.toContain('never-created');
      } finally {
        await orphan.close();
      }
    });
  });

  it('never shows a secret, an API key, a hash or the server key in any response, log line or event', async () => {
    const hashes = await h.deps.database.query<{ secret_hash: string | null; key_hash: string | null }>('select secret_hash, key_hash from "credentials"."credential"');
    const serverKeys = await h.deps.database.query<{ key: Buffer }>('select key from "credentials"."server_key"');
    expect(serverKeys).toHaveLength(1);
    const never = [
      ...secrets,
      ...hashes.flatMap((row) => [row.key_hash, row.secret_hash, row.secret_hash?.split('$').pop()].filter((value): value is string => !!value)),
      ...serverKeys.flatMap(({ key }) => [key.toString('hex'), key.toString('base64'), key.toString('base64url')]),
    ];
    expect(h.logs.length).toBeGreaterThan(50);
    expect(h.events.length).toBeGreaterThan(5);
    const haystacks = { responses: h.bodies.join('\n'), logs: h.logs.join(''), events: JSON.stringify(h.events) };
    for (const [where, text] of Object.entries(haystacks)) {
      for (const needle of never) {
        // A 16-character piece is enough to say a secret leaked, even cut or re-encoded around it.
        if (text.includes(needle.slice(-16))) throw new Error(`a secret or hash appears in the ${where}`);
      }
    }
  });
});
