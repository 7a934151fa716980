// What a client does with the platform, end to end and only over HTTP through its one public
// address: the all-in-one (embedded, and on the real servers when they are named) and split
// mode with two replicas of every service (real servers only), held to the same answers.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startSplit } from '@app/split';
import { createTestDatabase, eventually, readJson, REAL, SETTLE_BUDGET_MS, testModes, type Json } from '@app/testing';
import { bootstrapAdmin, startAllInOne, type Running } from '../support/deployments.js';
import { CLUSTER_ENV } from '../support/replicas.js';

const admin = bootstrapAdmin();
const ADMIN_ENV = admin.env;

const targets: { name: string; start(): Promise<Running> }[] = [
  ...testModes().map((mode) => ({ name: `all-in-one, ${mode}`, start: () => startAllInOne(mode, ADMIN_ENV) })),
  ...(REAL.databaseUrl && REAL.redisUrl && REAL.natsUrl
    ? [
        {
          name: 'split, 2 replicas of every service',
          start: async (): Promise<Running> => {
            const db = await createTestDatabase(REAL.databaseUrl!);
            const cluster = await startSplit({
              replicas: 2,
              port: 0,
              output: () => undefined,
              env: { PATH: process.env.PATH, DATABASE_URL: db.url, REDIS_URL: REAL.redisUrl, NATS_URL: REAL.natsUrl, LOG_LEVEL: 'warn', ...CLUSTER_ENV, CACHE_KEY_PREFIX: `journeys:${randomUUID().slice(0, 8)}:`, ...ADMIN_ENV },
            }).catch(async (error: unknown) => {
              await db.drop();
              throw error;
            });
            return {
              url: cluster.url,
              close: async () => {
                await cluster.stop();
                await db.drop();
              },
            };
          },
        },
      ]
    : []),
];

const PRODUCT = { name: 'Banana', price: 1.5, description: 'Yellow and sweet', stock: 120, category: 'Fruits', perishable: true };
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
/** One request id per answer, plain and short (what the platform keeps of a caller's, or its own UUID). */
const REQUEST_ID = /^[\w.:-]{1,128}$/;
const JSON_BODY = { 'content-type': 'application/json' };

describe.each(targets)('client journeys through the public address ($name)', (target) => {
  let running: Running;
  let adminToken: string;

  beforeAll(async () => {
    running = await target.start();
    adminToken = await admin.signIn(running.url);
  });

  afterAll(async () => {
    await running?.close();
  });

  async function token(fields: Record<string, string>) {
    const response = await fetch(`${running.url}/api/v1/sso/token`, { method: 'POST', headers: FORM, body: new URLSearchParams(fields) });
    expect(response.headers.get('x-request-id')).toMatch(REQUEST_ID);
    return { status: response.status, headers: response.headers, body: await readJson(response) };
  }
  async function call(method: string, path: string, bearer?: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${running.url}${path}`, {
      method,
      headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...(body === undefined ? {} : JSON_BODY), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    // Every answer names its request once, on every target: split mode's gateway and the service
    // behind it must not both add one.
    expect(response.headers.get('x-request-id')).toMatch(REQUEST_ID);
    const given = headers['x-request-id'];
    if (given && REQUEST_ID.test(given)) expect(response.headers.get('x-request-id')).toBe(given);
    return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as Json & Json[] };
  }
  const expectProblem = (reply: { status: number; headers: Headers; body: Json }, status: number, code: string) => {
    expect(reply.status).toBe(status);
    expect(reply.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(reply.body).toMatchObject({ status, code });
  };

  it('is live and ready, and reports every service ready', async () => {
    expect((await call('GET', '/health/liveness')).status).toBe(200);
    const report = await call('GET', '/api/v1/health/readiness');
    expect(report.status).toBe(200);
    expect(report.body.status).toBe('active');
    expect(Object.keys(report.body.services as Json).sort()).toEqual(['credentials', 'crud', 'identity', 'sso']);
  });

  it('serves one OpenAPI document with every public route', async () => {
    const docs = await call('GET', '/docs/json');
    expect(docs.status).toBe(200);
    expect(docs.body.openapi).toMatch(/^3\.1/);
    expect(Object.keys(docs.body.paths as Json)).toEqual(expect.arrayContaining(['/api/v1/products', '/api/v1/products/{id}', '/api/v1/identity', '/api/v1/sso/token', '/api/v1/credentials']));
  });

  it('answers problems: 401 without a token, 400 for a bad body, 404 for no record, each with a request id', async () => {
    const anonymous = await call('GET', '/api/v1/products', undefined, undefined, { 'x-request-id': 'journey-401' });
    expectProblem(anonymous, 401, 'PLATFORM_AUTH_INVALID_TOKEN');
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="api-platform"');
    // Authentication before validation: a bad body without a token is a 401 too.
    expectProblem(await call('POST', '/api/v1/products', undefined, { price: 'free' }), 401, 'PLATFORM_AUTH_INVALID_TOKEN');
    expectProblem(await call('POST', '/api/v1/products', adminToken, { price: 'free' }, { 'x-request-id': 'journey-400' }), 400, 'PLATFORM_VALIDATION_FAILED');
    // A request id that is not plain is replaced, not echoed.
    const replaced = await call('GET', '/api/v1/products?limit=1', adminToken, undefined, { 'x-request-id': 'a b' });
    expect(replaced.headers.get('x-request-id')).not.toBe('a b');
    const missing = await call('GET', `/api/v1/products/${randomUUID()}`, adminToken, undefined, { 'x-request-id': 'journey-404' });
    expectProblem(missing, 404, 'CRUD_NOT_FOUND');
    expect(missing.headers.get('x-request-id')).toBe('journey-404');
  });

  it('creates, reads, updates, lists and deletes a record', async () => {
    const created = await call('POST', '/api/v1/products', adminToken, PRODUCT);
    expect(created.status).toBe(201);
    const id = String(created.body[0]!.id);
    expect((await call('GET', `/api/v1/products/${id}`, adminToken, undefined, { 'x-request-id': 'journey-read' })).body[0]).toMatchObject(PRODUCT);
    const updated = await call('PUT', `/api/v1/products/${id}`, adminToken, { price: 2.25 });
    expect(updated.status).toBe(200);
    expect((await call('GET', `/api/v1/products/${id}`, adminToken)).body[0]).toMatchObject({ ...PRODUCT, price: 2.25 });
    const list = await call('GET', '/api/v1/products?limit=100', adminToken);
    expect(list.status).toBe(200);
    expect(list.body.map((record) => record.id)).toContain(id);
    expect((await call('DELETE', `/api/v1/products/${id}`, adminToken)).status).toBe(204);
    expectProblem(await call('GET', `/api/v1/products/${id}`, adminToken), 404, 'CRUD_NOT_FOUND');
  });

  it('signs a new user up, gives it a password, and lets it sign in, refresh once, and revoke', async () => {
    const email = `user-${randomUUID()}@example.com`;
    const signedUp = await call('POST', '/api/v1/identity', undefined, { name: 'Journey User', email });
    expect(signedUp.status).toBe(201);
    const user = signedUp.body[0]!;
    expect(user).toMatchObject({ email, roles: [] });
    const password = randomBytes(18).toString('base64url');
    expect((await call('POST', '/api/v1/credentials', adminToken, { identity_id: user.id, provider: 'LOCAL', secret: password })).status).toBe(201);
    expect((await call('POST', '/api/v1/identity', undefined, { name: 'Again', email })).status).toBe(422);

    const wrong = await token({ grant_type: 'password', username: email, password: `${password}x` });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
    const signedIn = await token({ grant_type: 'password', username: email, password });
    expect(signedIn.status).toBe(200);
    expect(signedIn.body).toMatchObject({ token_type: 'Bearer', expires_in: expect.any(Number) });
    // The user reads what any signed-in user may, and not what only admins may.
    expect((await call('GET', `/api/v1/identity/${String(user.id)}`, String(signedIn.body.access_token))).status).toBe(200);
    expect((await call('PUT', `/api/v1/identity/${String(user.id)}`, String(signedIn.body.access_token), { roles: ['admin'] })).status).toBe(403);

    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: String(signedIn.body.refresh_token) });
    expect(refreshed.status).toBe(200);
    const reused = await token({ grant_type: 'refresh_token', refresh_token: String(signedIn.body.refresh_token) });
    expect(reused.status).toBe(400);
    expect(reused.body.error).toBe('invalid_grant');

    const signedInAgain = await token({ grant_type: 'password', username: email, password });
    const access = String(signedInAgain.body.access_token);
    expect((await call('GET', '/api/v1/products?limit=1', access)).status).toBe(200);
    const revoked = await fetch(`${running.url}/api/v1/sso/revoke`, { method: 'POST', headers: FORM, body: new URLSearchParams({ token: String(signedInAgain.body.refresh_token) }) });
    expect(revoked.status).toBe(200);
    // The revocation reaches the verifier (how soon is `npm run bench`'s measure, not a test's).
    await eventually(async () => (await call('GET', '/api/v1/products?limit=1', access)).status === 401, SETTLE_BUDGET_MS, 20);
    expect((await call('GET', '/api/v1/products?limit=1', access)).status).toBe(401);
    expect((await token({ grant_type: 'refresh_token', refresh_token: String(signedInAgain.body.refresh_token) })).status).toBe(400);
  });

  it('gives a service identity an API key and a client_credentials token with exactly its roles', async () => {
    const service = await call('POST', '/api/v1/identity', undefined, { name: 'Journey Service', email: `service-${randomUUID()}@example.com` });
    expect(service.status).toBe(201);
    const secret = randomBytes(32).toString('base64url');
    const credential = await call('POST', '/api/v1/credentials', adminToken, { identity_id: service.body[0]!.id, provider: 'API_KEY', secret });
    expect(credential.status).toBe(201);
    expect(JSON.stringify(credential.body)).not.toContain(secret);
    const granted = await token({ grant_type: 'client_credentials', client_secret: secret });
    expect(granted.status).toBe(200);
    const claims = JSON.parse(Buffer.from(String(granted.body.access_token).split('.')[1]!, 'base64url').toString()) as Json;
    expect(claims).toMatchObject({ sub: service.body[0]!.id, roles: [], client_id: credential.body[0]!.id });
    expect((await call('GET', '/api/v1/products?limit=1', String(granted.body.access_token))).status).toBe(200);
    expect((await token({ grant_type: 'client_credentials', client_secret: `${secret}x` })).status).toBe(401);
  });
});
