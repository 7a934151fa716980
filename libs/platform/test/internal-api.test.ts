import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { identityApi, UpstreamError, type InternalIdentity } from '@app/contracts';
import {
  AppError,
  buildServiceApp,
  createHttpClients,
  defineService,
  inProcessClient,
  type App,
  type HttpClients,
  type InternalCall,
  type InternalImplementation,
} from '@app/platform';
import { openTestDependencies, startTokenIssuer, type TokenIssuer } from '@app/testing';

/**
 * What the kit derives from one route table (identity's, served here by a stand-in): its
 * routes, its HTTP client and its in-process adapter answer the same, whichever a caller holds.
 */
const ADA: InternalIdentity = { id: randomUUID(), name: 'Ada', email: 'ada@example.com', roles: ['admin'], activated: true };

const notFound = () => new AppError('TEST_NOT_FOUND', 404, 'error.forbidden');
const taken = () => new AppError('TEST_TAKEN', 422, 'error.forbidden');

/** Every call the implementation saw: its input, and who made it with what authority. */
const seen: { input: unknown; caller: string; authority?: string }[] = [];
const record = (input: unknown, call: InternalCall) => seen.push({ input, caller: call.principal.roles.join(), authority: call.authority.authorization });

const implementation: InternalImplementation<typeof identityApi> = {
  lookup: async (query, call) => {
    record(query, call);
    if ('id' in query && query.id === ADA.id) return ADA;
    if ('email' in query && query.email === 'broken@example.com') throw new Error('the database is gone');
    throw notFound();
  },
  create: async (input, call) => {
    record(input, call);
    if (input.email === ADA.email) throw taken();
    call.header('location', `/api/v1/identity/${ADA.id}`);
    return { ...ADA, name: input.name, email: input.email };
  },
};

describe('an internal API served over HTTP (split mode)', () => {
  let issuer: TokenIssuer;
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let app: App;
  let url: string;
  let clients: HttpClients;
  let systemToken: string;
  beforeAll(async () => {
    issuer = await startTokenIssuer();
    deps = await openTestDependencies('embedded', { JWKS_URL: issuer.jwksUrl });
    app = await buildServiceApp(
      defineService({
        name: 'identity',
        description: 'a stand-in',
        checks: [],
        routes: async (scope, { serve }) => {
          await serve(identityApi, implementation);
          // Its public read, answering what the caller it was called for may see.
          scope.get('/api/v1/identity/:id', { config: { auth: 'public' } }, async (request) => [{ ...ADA, name: `read as ${request.headers.authorization}` }]);
        },
      }),
      deps,
    );
    url = await app.listen({ port: 0, host: '127.0.0.1' });
    systemToken = await issuer.mint('service:sso', ['system']);
    clients = createHttpClients({ urls: { identity: url }, systemToken: async () => systemToken });
  });
  afterAll(async () => {
    await clients.close();
    await app.close();
    await deps.dispose();
    await issuer.close();
  });

  const post = (path: string, body: unknown, token?: string) =>
    fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });

  it('answers a call through the derived client with the process system token', async () => {
    seen.length = 0;
    expect(await clients.identity.lookup({ id: ADA.id })).toEqual(ADA);
    expect(seen).toEqual([{ input: { id: ADA.id }, caller: 'system', authority: `Bearer ${systemToken}` }]);
  });

  it("resolves the method's absent status to undefined, and any other failure to an UpstreamError", async () => {
    expect(await clients.identity.lookup({ id: randomUUID() })).toBeUndefined();
    expect(await clients.identity.create({ name: 'Ada', email: ADA.email, roles: [] })).toBeUndefined();
    const broken = clients.identity.lookup({ email: 'broken@example.com' });
    await expect(broken).rejects.toBeInstanceOf(UpstreamError);
    await expect(broken).rejects.toThrow('identity: answered 500 on /internal/v1/identities/lookup');
  });

  it("answers the method's success status, the implementation's headers and the output as serialized", async () => {
    const response = await post(identityApi.methods.create.path, { name: ' Grace ', email: 'GRACE@example.com', roles: ['a', 'a'] }, systemToken);
    expect(response.status).toBe(201);
    expect(response.headers.get('location')).toBe(`/api/v1/identity/${ADA.id}`);
    // The input as validated (trimmed, lower-cased, deduplicated), the output as declared.
    expect(await response.json()).toEqual({ ...ADA, name: 'Grace', email: 'grace@example.com' });
    expect(seen.at(-1)?.input).toEqual({ name: 'Grace', email: 'grace@example.com', roles: ['a'] });
  });

  it("answers the implementation's own problem for its absent status", async () => {
    const response = await post(identityApi.methods.lookup.path, { id: randomUUID() }, systemToken);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'TEST_NOT_FOUND' });
  });

  it("is open only to the platform's own services, and validates the body before the implementation sees it", async () => {
    seen.length = 0;
    expect((await post(identityApi.methods.lookup.path, { id: ADA.id })).status).toBe(401);
    expect((await post(identityApi.methods.lookup.path, { id: ADA.id }, await issuer.mint(ADA.id, ['system', 'admin']))).status).toBe(403);
    expect((await post(identityApi.methods.lookup.path, { id: 'not a uuid' }, systemToken)).status).toBe(400);
    expect(seen).toEqual([]);
  });

  it("reads on a caller's behalf through the declared public route, with exactly the caller's authority", async () => {
    seen.length = 0;
    expect(await clients.identity.lookup({ id: ADA.id }, { authorization: 'Bearer caller' })).toEqual({ ...ADA, name: 'read as Bearer caller' });
    expect(seen).toEqual([]);
  });

  it("refuses to serve another service's API", async () => {
    const impostor = defineService({ name: 'crud', description: 'an impostor', checks: [], routes: async (_app, { serve }) => serve(identityApi, implementation) });
    await expect(buildServiceApp(impostor, deps)).rejects.toThrow("crud cannot serve identity's internal API");
  });
});

describe('an internal API in process (the all-in-one)', () => {
  const client = inProcessClient(identityApi, implementation);

  it('calls the implementation directly, as the serving service itself', async () => {
    seen.length = 0;
    expect(await client.lookup({ id: ADA.id }, { authorization: 'Bearer caller' })).toEqual(ADA);
    expect(seen).toEqual([{ input: { id: ADA.id }, caller: 'system', authority: undefined }]);
  });

  it("resolves the method's absent status to undefined and lets any other error through as thrown", async () => {
    expect(await client.lookup({ id: randomUUID() })).toBeUndefined();
    expect(await client.create({ name: 'Ada', email: ADA.email, roles: [] })).toBeUndefined();
    await expect(client.lookup({ email: 'broken@example.com' })).rejects.toThrow('the database is gone');
  });
});
