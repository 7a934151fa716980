import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { identityApi, identityEventSchema } from '@app/contracts';
import { CASES, startHarness, type Harness } from './harness.js';

describe.each(CASES)('identity service through the platform\'s edge (%s, %s)', (topology, mode) => {
  let h: Harness;
  let admin: string;
  let system: string;
  /** sso's own service token: the only caller internal routes answer. */
  let platform: string;
  let ada: { id: string; token: string };
  let bob: { id: string; token: string };

  const register = async (name: string, email: string) => {
    const reply = await h.call('POST', '/api/v1/identity', { body: { name, email } });
    expect(reply.status).toBe(201);
    return { id: reply.body[0].id as string, token: await h.issuer.mint(reply.body[0].id) };
  };

  beforeAll(async () => {
    h = await startHarness(mode, topology);
    admin = await h.issuer.mint(randomUUID(), ['admin']);
    system = await h.issuer.mint(randomUUID(), ['system']);
    platform = await h.issuer.mint('service:sso', ['system']);
    ada = await register('Ada', 'Ada@Example.com');
    bob = await register('Bob', 'bob@example.com');
  });
  afterAll(() => h.close());

  describe('POST /api/v1/identity', () => {
    it('registers an identity without a token: 201 with the record, email lower-cased, no roles', async () => {
      const reply = await h.call('POST', '/api/v1/identity', {
        body: { name: 'Carol', email: 'Carol@Example.COM', avatar: 'https://cdn.example.com/carol.png' },
      });
      expect(reply.status).toBe(201);
      expect(reply.body).toEqual([
        {
          id: expect.any(String),
          name: 'Carol',
          email: 'carol@example.com',
          avatar: 'https://cdn.example.com/carol.png',
          roles: [],
          activated: true,
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
        },
      ]);
      const event = await h.event((e) => e.subject === 'identity.created' && (e.data as { identityId: string }).identityId === reply.body[0].id);
      expect(identityEventSchema.parse(event.data)).toMatchObject({ email: 'carol@example.com', name: 'Carol', roles: [], activated: true });
    });

    it('answers 400 for a bad email or a non-http avatar, naming the field', async () => {
      const badEmail = await h.call('POST', '/api/v1/identity', { body: { name: 'X', email: 'not-an-email' } });
      expect(badEmail.status).toBe(400);
      expect(badEmail.body.errors.map((e: { path: string }) => e.path)).toEqual(['body.email']);
      const badAvatar = await h.call('POST', '/api/v1/identity', { body: { name: 'X', email: 'x@example.com', avatar: 'javascript:alert(1)' } });
      expect(badAvatar.status).toBe(400);
      expect(badAvatar.body.errors.map((e: { path: string }) => e.path)).toEqual(['body.avatar']);
    });

    it('answers 422 when the email is taken, in any case', async () => {
      const reply = await h.call('POST', '/api/v1/identity', { body: { name: 'Ada 2', email: 'ADA@example.com' } });
      expect(reply.status).toBe(422);
      expect(reply.body).toMatchObject({ status: 422, code: 'IDENTITY_EMAIL_TAKEN', detail: 'The email ada@example.com is already used by another identity.' });
    });

    it('rejects unknown fields and lets only an admin set roles (403 to a user, a system token and anonymous callers)', async () => {
      expect((await h.call('POST', '/api/v1/identity', { body: { name: 'E', email: 'e@example.com', password: 'x' } })).status).toBe(400);
      const anonymous = await h.call('POST', '/api/v1/identity', { body: { name: 'E', email: 'e@example.com', roles: ['admin'] } });
      expect(anonymous.status).toBe(403);
      const byUser = await h.call('POST', '/api/v1/identity', { token: bob.token, body: { name: 'E', email: 'e@example.com', roles: ['admin'] } });
      expect(byUser.status).toBe(403);
      const bySystem = await h.call('POST', '/api/v1/identity', { token: system, body: { name: 'E', email: 'e@example.com', roles: ['admin'] } });
      expect([bySystem.status, bySystem.body.code]).toEqual([403, 'IDENTITY_PRIVILEGED_FIELDS']);
      expect((await h.call('GET', '/api/v1/identity/email/e%40example.com', { token: admin })).status).toBe(404);
      const byAdmin = await h.call('POST', '/api/v1/identity', { token: admin, body: { name: 'E', email: 'e@example.com', roles: ['admin'] } });
      expect(byAdmin.status).toBe(201);
      expect(byAdmin.body[0].roles).toEqual(['admin']);
    });
  });

  describe('reads', () => {
    it('lets the identity itself, an admin and a system token read it; anyone else gets 403', async () => {
      for (const token of [ada.token, admin, system]) {
        const reply = await h.call('GET', `/api/v1/identity/${ada.id}`, { token });
        expect(reply.status).toBe(200);
        expect(reply.body).toEqual([expect.objectContaining({ id: ada.id, email: 'ada@example.com', name: 'Ada' })]);
      }
      expect((await h.call('GET', `/api/v1/identity/${ada.id}`, { token: bob.token })).status).toBe(403);
    });

    it('answers 401 with WWW-Authenticate without a valid token, 404 for an unknown id and 400 for a malformed one', async () => {
      const anonymous = await h.call('GET', `/api/v1/identity/${ada.id}`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="api-platform"');
      expect((await h.call('GET', `/api/v1/identity/${ada.id}`, { token: 'not.a.token' })).status).toBe(401);
      expect((await h.call('GET', `/api/v1/identity/${randomUUID()}`, { token: admin })).body).toMatchObject({ status: 404, code: 'IDENTITY_NOT_FOUND' });
      expect((await h.call('GET', '/api/v1/identity/12', { token: admin })).status).toBe(400);
    });

    it('finds an identity by email, exactly and in any case; others get 403 whether or not it exists', async () => {
      const own = await h.call('GET', '/api/v1/identity/email/ADA%40EXAMPLE.COM', { token: ada.token });
      expect(own.status).toBe(200);
      expect(own.body).toEqual([expect.objectContaining({ id: ada.id })]);
      expect((await h.call('GET', '/api/v1/identity/email/ada%40example.co', { token: admin })).status).toBe(404);
      expect((await h.call('GET', '/api/v1/identity/email/ada%40example.com', { token: bob.token })).status).toBe(403);
      expect((await h.call('GET', '/api/v1/identity/email/nobody%40example.com', { token: bob.token })).status).toBe(403);
      expect((await h.call('GET', '/api/v1/identity/email/bob%40example.com', { token: system })).body[0].id).toBe(bob.id);
    });

    it('lists with paging, a Link header, an opt-in count and equality filters', async () => {
      const first = await h.call('GET', '/api/v1/identity?limit=1&sort=email', { token: admin, headers: { prefer: 'count=exact' } });
      expect(first.status).toBe(200);
      expect(first.body).toHaveLength(1);
      expect(first.body[0].email).toBe('ada@example.com');
      const total = Number(first.headers.get('content-range')?.split('/')[1]);
      expect(first.headers.get('content-range')).toBe(`0-0/${total}`);
      expect(total).toBeGreaterThanOrEqual(3);
      const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.get('link') ?? '')?.[1];
      expect(next).toMatch(/^\/api\/v1\/identity\?limit=1&sort=email&cursor=[\w-]+$/);
      const second = await h.call('GET', next!, { token: admin });
      expect(second.body[0].email).toBe('bob@example.com');
      expect(second.headers.get('link')).toContain('rel="first"');
      expect(second.headers.get('content-range')).toBeNull();
      const byOffset = await h.call('GET', '/api/v1/identity?limit=1&sort=email&offset=1', { token: admin });
      expect(byOffset.body[0].email).toBe('bob@example.com');
      expect(byOffset.headers.get('link')).toContain('rel="prev"');
      const filtered = await h.call('GET', '/api/v1/identity?email=BOB@example.com&activated=true', { token: system });
      expect(filtered.body.map((i: { id: string }) => i.id)).toEqual([bob.id]);
      expect((await h.call('GET', '/api/v1/identity?roles=admin', { token: admin })).body.every((i: { roles: string[] }) => i.roles.includes('admin'))).toBe(true);
    });

    it('lists only the caller itself for a non-admin, and rejects bad paging, sorts and unknown parameters', async () => {
      const own = await h.call('GET', '/api/v1/identity', { token: bob.token });
      expect(own.body.map((i: { id: string }) => i.id)).toEqual([bob.id]);
      for (const query of ['limit=0', 'limit=101', 'offset=-1', 'sort=password', 'activated=yes', 'color=red']) {
        expect((await h.call('GET', `/api/v1/identity?${query}`, { token: admin })).status).toBe(400);
      }
    });
    it('filters with PostgREST operators: ilike with *, in, not., is, ranges on instants and roles held', async () => {
      const ids = async (query: string, token = admin) => {
        const reply = await h.call('GET', `/api/v1/identity?${query}&sort=email`, { token });
        expect(reply.status).toBe(200);
        return reply.body.map((i: { id: string }) => i.id);
      };
      expect(await ids('email=ilike.*@EXAMPLE.com&name=in.(Ada,Bob)')).toEqual([ada.id, bob.id]);
      expect(await ids('email=like.ada*')).toEqual([ada.id]);
      expect(await ids(`email=in.(${encodeURIComponent('"BOB@example.com"')},nobody@example.com)`)).toEqual([bob.id]);
      expect(await ids('email=ilike.*@example.com&name=not.eq.Ada&name=in.(Ada,Bob)')).toEqual([bob.id]);
      expect(await ids('name=in.(Ada,Bob)&avatar=is.null&createdAt=gt.2000-01-01T00:00:00Z')).toEqual([ada.id, bob.id]);
      expect(await ids('name=in.(Ada,Bob)&roles=eq.admin')).toEqual([]);
      expect(await ids('name=in.(Ada,Bob)&roles=neq.admin')).toEqual([ada.id, bob.id]);
      // A non-admin's filters apply within its own record.
      expect(await ids('email=ilike.*@example.com', bob.token)).toEqual([bob.id]);
      expect(await ids('email=eq.ada@example.com', bob.token)).toEqual([]);
    });

    it.each([
      ['activated=gt.true', 'query.activated', 'The operator "gt" does not apply to this field; use one of eq, neq, is, e.g. is.true.'],
      ['roles=like.adm*', 'query.roles', 'The operator "like" does not apply to this field; use one of eq, neq, in, e.g. in.(admin).'],
      ['createdAt=gte.yesterday', 'query.createdAt', 'Invalid ISO datetime'],
      ['createdAt=between.1', 'query.createdAt', 'Unknown operator "between": write op.value with op one of eq, neq, gt, gte, lt, lte, in, is, e.g. gte.2025-01-01T00:00:00Z.'],
      ['name=in.()', 'query.name', 'The list after "in." is empty; give at least one value, e.g. in.(a,b).'],
      ['email=is.true', 'query.email', 'After "is." write null.'],
    ])('answers 400 to ?%s, naming the field', async (query, path, message) => {
      const reply = await h.call('GET', `/api/v1/identity?${query}`, { token: admin });
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual({
        type: 'urn:problem:platform-validation-failed',
        title: 'Bad Request',
        status: 400,
        detail: 'The request is invalid; see "errors" for each problem.',
        instance: '/api/v1/identity',
        code: 'PLATFORM_VALIDATION_FAILED',
        requestId: expect.any(String),
        errors: [{ path, message }],
      });
    });

    it('treats an injection attempt in a filter as a value', async () => {
      const attempt = encodeURIComponent("x' or '1'='1");
      for (const query of [`name=eq.${attempt}`, `email=like.*${attempt}*`, `roles=in.(${attempt},"a) or (true")`]) {
        const reply = await h.call('GET', `/api/v1/identity?${query}`, { token: admin });
        expect(reply.status).toBe(200);
        expect(reply.body).toEqual([]);
      }
    });
  });

  describe('PUT /api/v1/identity/{id}', () => {
    it('lets the identity change its name, email and avatar, publishes identity.updated and serves the new record', async () => {
      await h.call('GET', `/api/v1/identity/${bob.id}`, { token: bob.token }); // cached now
      const reply = await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: bob.token, body: { name: 'Robert', avatar: 'https://example.com/b.png' } });
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual([expect.objectContaining({ id: bob.id, name: 'Robert', avatar: 'https://example.com/b.png' })]);
      expect((await h.call('GET', `/api/v1/identity/${bob.id}`, { token: bob.token })).body[0].name).toBe('Robert');
      const event = await h.event((e) => e.subject === 'identity.updated' && (e.data as { identityId: string }).identityId === bob.id);
      expect(identityEventSchema.parse(event.data).name).toBe('Robert');
    });

    it('answers 403 to roles or activation from a non-admin and to another user, 422 for a taken email, 404 for an unknown id', async () => {
      expect((await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: bob.token, body: { roles: ['admin'] } })).status).toBe(403);
      expect((await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: bob.token, body: { activated: false } })).status).toBe(403);
      expect((await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: ada.token, body: { name: 'Mallory' } })).status).toBe(403);
      expect((await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: bob.token, body: { email: 'Ada@example.com' } })).status).toBe(422);
      expect((await h.call('PUT', `/api/v1/identity/${randomUUID()}`, { token: admin, body: { name: 'Nobody' } })).status).toBe(404);
      expect((await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: bob.token, body: { id: randomUUID() } })).status).toBe(400);
    });

    it('lets only an admin set roles or activation: a system token gets 403 and nothing changes', async () => {
      const byAdmin = await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: admin, body: { roles: ['admin', 'admin', 'billing.read'] } });
      expect(byAdmin.body[0].roles).toEqual(['admin', 'billing.read']);
      for (const body of [{ roles: [] }, { activated: false }, { roles: ['system'], activated: true }]) {
        const bySystem = await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: system, body });
        expect([bySystem.status, bySystem.body.code]).toEqual([403, 'IDENTITY_PRIVILEGED_FIELDS']);
      }
      expect((await h.call('GET', `/api/v1/identity/${bob.id}`, { token: admin })).body[0]).toMatchObject({ roles: ['admin', 'billing.read'], activated: true });
      // A system token may still change what an owner may (the name), like any privileged reader.
      expect((await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: system, body: { name: 'Robert' } })).status).toBe(200);
      expect((await h.call('PUT', `/api/v1/identity/${bob.id}`, { token: admin, body: { roles: [] } })).body[0].roles).toEqual([]);
    });

    it('refuses a user or a system identity promoting or reactivating itself (403, unchanged), in every language', async () => {
      const created = await h.call('POST', '/api/v1/identity', { token: admin, body: { name: 'Robot', email: 'robot@example.com', roles: ['system'] } });
      const robot = { id: created.body[0].id as string, token: await h.issuer.mint(created.body[0].id, ['system']) };
      for (const [who, body] of [
        [robot, { roles: ['system', 'admin'] }],
        [robot, { activated: true }],
        [bob, { roles: ['admin'] }],
        [bob, { activated: true }],
      ] as const) {
        const reply = await h.call('PUT', `/api/v1/identity/${who.id}`, { token: who.token, body, headers: { 'accept-language': 'de' } });
        expect(reply.status).toBe(403);
        expect(reply.headers.get('content-type')).toContain('application/problem+json');
        expect(reply.body).toMatchObject({ code: 'IDENTITY_PRIVILEGED_FIELDS', detail: 'Nur ein Admin darf Rollen oder die Aktivierung setzen.' });
      }
      expect((await h.call('GET', `/api/v1/identity/${robot.id}`, { token: admin })).body[0].roles).toEqual(['system']);
      expect((await h.call('GET', `/api/v1/identity/${bob.id}`, { token: admin })).body[0].roles).toEqual([]);
    });

    it('has no delete route', async () => {
      expect((await h.call('DELETE', `/api/v1/identity/${bob.id}`, { token: admin })).status).toBe(404);
    });
  });

  describe('the last active admin', () => {
    const newAdmin = async (name: string) => {
      const reply = await h.call('POST', '/api/v1/identity', { token: admin, body: { name, email: `${name}-${randomUUID()}@example.com`, roles: ['admin'] } });
      expect(reply.status).toBe(201);
      return { id: reply.body[0].id as string, token: await h.issuer.mint(reply.body[0].id, ['admin']) };
    };
    const activeAdmins = async () =>
      (await h.deps.database.query<{ id: string }>(`select id from "identity"."identity" where activated and 'admin' = any(roles)`)).map((row) => row.id);
    /** Leaves exactly the given identities as active admins (through the API, as an operator would). */
    const onlyAdmins = async (keep: string[]) => {
      for (const id of await activeAdmins()) {
        if (!keep.includes(id)) expect((await h.call('PUT', `/api/v1/identity/${id}`, { token: admin, body: { roles: [] } })).status).toBe(200);
      }
      expect((await activeAdmins()).sort()).toEqual([...keep].sort());
    };

    it('cannot be demoted or deactivated, by itself or another admin: 409 problem+json, localized, nothing changed', async () => {
      const last = await newAdmin('last');
      await onlyAdmins([last.id]);
      for (const [token, body] of [
        [last.token, { roles: [] }],
        [admin, { roles: ['billing.read'] }],
        [last.token, { activated: false }],
        [admin, { roles: ['admin'], activated: false }],
      ] as const) {
        const reply = await h.call('PUT', `/api/v1/identity/${last.id}`, { token, body, headers: { 'accept-language': 'fr' } });
        expect(reply.status).toBe(409);
        expect(reply.headers.get('content-type')).toContain('application/problem+json');
        expect(reply.body).toMatchObject({ status: 409, code: 'IDENTITY_LAST_ADMIN', detail: expect.stringContaining('dernier administrateur actif') });
      }
      expect((await h.call('PUT', `/api/v1/identity/${last.id}`, { token: admin, body: { roles: [] } })).body.detail).toBe(
        'This is the last active admin: it cannot be demoted or deactivated. Make another identity an admin first.',
      );
      expect((await h.call('GET', `/api/v1/identity/${last.id}`, { token: admin })).body[0]).toMatchObject({ roles: ['admin'], activated: true });
      // Keeping the role while adding others, or changing anything else, is fine.
      expect((await h.call('PUT', `/api/v1/identity/${last.id}`, { token: last.token, body: { roles: ['admin', 'billing.read'], name: 'Last' } })).status).toBe(200);
      // A second admin makes the first one free to go.
      const next = await newAdmin('next');
      expect((await h.call('PUT', `/api/v1/identity/${last.id}`, { token: next.token, body: { activated: false } })).status).toBe(200);
      expect(await activeAdmins()).toEqual([next.id]);
    });

    it('survives two admins demoting or deactivating each other at once: exactly one stays', async () => {
      for (const body of [{ roles: [] }, { activated: false }, { roles: [] }, { activated: false }, { roles: ['billing.read'] }]) {
        const [a, b] = [await newAdmin('a'), await newAdmin('b')];
        await onlyAdmins([a.id, b.id]);
        const replies = await Promise.all([
          h.call('PUT', `/api/v1/identity/${b.id}`, { token: a.token, body }),
          h.call('PUT', `/api/v1/identity/${a.id}`, { token: b.token, body }),
        ]);
        expect(replies.map((reply) => reply.status).sort()).toEqual([200, 409]);
        expect(await activeAdmins()).toHaveLength(1);
      }
      // And a crowd of admins each demoting the next one: never fewer than one.
      const crowd = await Promise.all(Array.from({ length: 6 }, (_, i) => newAdmin(`crowd${i}`)));
      await onlyAdmins(crowd.map((member) => member.id));
      const replies = await Promise.all(
        crowd.map((member, i) => h.call('PUT', `/api/v1/identity/${crowd[(i + 1) % crowd.length]!.id}`, { token: member.token, body: { roles: [] } })),
      );
      expect(replies.filter((reply) => reply.status === 409)).toHaveLength(1);
      expect(await activeAdmins()).toHaveLength(1);
    });
  });

  // Served by identity running alone (split mode: an app of its own in this process, or its first replica) only: in the all-in-one its peers call it in process.
  describe('internal lookup', () => {
    const lookup = (body: unknown, token?: string) =>
      h.call('POST', identityApi.methods.lookup.path, { body, token, base: h.standalone.identity });

    it('finds an identity by email (any case) or id for the platform\'s own service token', async () => {
      const byEmail = await lookup({ email: 'ADA@example.com' }, platform);
      expect(byEmail.status).toBe(200);
      expect(byEmail.body).toEqual({ id: ada.id, name: 'Ada', email: 'ada@example.com', avatar: null, roles: [], activated: true });
      expect((await lookup({ id: ada.id }, platform)).body.id).toBe(ada.id);
      expect((await lookup({ email: 'nobody@example.com' }, platform)).status).toBe(404);
    });

    it('creates an identity with roles for the platform\'s own service token only (sso\'s bootstrap admin); 422 for a taken email', async () => {
      const create = (body: unknown, token?: string) => h.call('POST', identityApi.methods.create.path, { body, token, base: h.standalone.identity });
      const body = { name: 'Boot', email: 'boot@example.com', roles: ['admin'] };
      expect((await create(body, admin)).status).toBe(403);
      expect((await create(body, bob.token)).status).toBe(403);
      expect((await create(body)).status).toBe(401);
      expect((await h.call('POST', identityApi.methods.create.path, { body, token: platform })).status).toBe(404);
      const created = await create(body, platform);
      expect(created.status).toBe(201);
      expect(created.body).toEqual({ id: expect.any(String), name: 'Boot', email: 'boot@example.com', roles: ['admin'], activated: true });
      expect((await create(body, platform)).status).toBe(422);
    });

    it('refuses admins, users and identities an admin gave the system role (403), anonymous callers (401), and is not served at the edge', async () => {
      expect((await lookup({ id: ada.id }, admin)).status).toBe(403);
      expect((await lookup({ id: ada.id }, system)).status).toBe(403);
      expect((await h.call('POST', identityApi.methods.create.path, { body: { name: 'X', email: 'x@example.com', roles: ['admin'] }, token: system, base: h.standalone.identity })).status).toBe(403);
      expect((await lookup({ id: ada.id }, ada.token)).status).toBe(403);
      expect((await lookup({ id: ada.id })).status).toBe(401);
      // The edge (the all-in-one, or the gateway in front of the replicas) answers /internal: a token first, then no such route.
      expect((await h.call('POST', identityApi.methods.lookup.path, { body: { id: ada.id } })).status).toBe(401);
      expect((await h.call('POST', identityApi.methods.lookup.path, { body: { id: ada.id }, token: platform })).status).toBe(404);
    });
  });

  it('is documented in the merged OpenAPI under the Identity tag, without internal routes', async () => {
    const docs = await h.call('GET', '/docs/json');
    const operations = Object.values(docs.body.paths as Record<string, Record<string, { tags?: string[] }>>).flatMap((path) => Object.values(path));
    const tags = new Set(operations.flatMap((operation) => operation.tags ?? []));
    expect([...tags]).toEqual(expect.arrayContaining(['Identity', 'Credentials']));
    expect(docs.body.paths['/api/v1/identity']?.post?.tags).toEqual(['Identity']);
    expect(docs.body.paths['/api/v1/identity/{id}']?.put?.tags).toEqual(['Identity']);
    expect(Object.keys(docs.body.paths).some((path) => path.startsWith('/internal'))).toBe(false);
  });
});
