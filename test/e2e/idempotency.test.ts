// Idempotency-Key on every kind of create, end to end through the public address (issue 25,
// point 4): identities (anonymous sign-up and an admin's), credentials, OAuth clients and
// generic records, in the all-in-one and split mode (in process, embedded and real; and as two
// processes of every service on the real servers, where a retry reaches the other replica).
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startSplit, type SplitCluster } from '@app/split';
import { createTestDatabase, itIf, REAL, testModes } from '@app/testing';
import { bootstrapAdmin, startAllInOne, startInProcessSplit, type Running } from '../support/deployments.js';
import { CLUSTER_ENV } from '../support/replicas.js';

const admin = bootstrapAdmin();

interface Target {
  name: string;
  /** Two processes of every service: a retry can reach another replica than the first request. */
  replicated?: boolean;
  start(): Promise<Running & { replicas?: SplitCluster['replicas'] }>;
}

const targets: Target[] = [
  ...testModes().flatMap((mode) => [
    { name: `all-in-one, ${mode}`, start: () => startAllInOne(mode, admin.env) },
    { name: `split in process, ${mode}`, start: () => startInProcessSplit(mode, admin.env) },
  ]),
  ...(REAL.databaseUrl && REAL.redisUrl && REAL.natsUrl
    ? [
        {
          name: 'split, 2 replicas of every service',
          replicated: true,
          start: async () => {
            const db = await createTestDatabase(REAL.databaseUrl!);
            const cluster = await startSplit({
              replicas: 2,
              port: 0,
              output: () => undefined,
              env: {
                PATH: process.env.PATH,
                DATABASE_URL: db.url,
                REDIS_URL: REAL.redisUrl,
                NATS_URL: REAL.natsUrl,
                LOG_LEVEL: 'warn',
                ...CLUSTER_ENV,
                CACHE_KEY_PREFIX: `idempotency:${randomUUID().slice(0, 8)}:`,
                ...admin.env,
              },
            }).catch(async (error: unknown) => {
              await db.drop();
              throw error;
            });
            return {
              url: cluster.url,
              replicas: cluster.replicas,
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

interface Answer {
  status: number;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- assertions read any shape
  location: string | null;
  etag: string | null;
}

/** What a replay must repeat of a create's answer. */
const seen = (answer: Answer) => ({ status: answer.status, text: answer.text, location: answer.location, etag: answer.etag });

describe.each(targets)('Idempotency-Key through the public address ($name)', (target) => {
  let running: Awaited<ReturnType<Target['start']>>;
  let adminToken: string;

  const send = async (method: string, path: string, options: { token?: string; key?: string; body?: unknown; base?: string; headers?: Record<string, string> } = {}): Promise<Answer> => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.key !== undefined) headers['idempotency-key'] = options.key;
    const response = await fetch(new URL(path, options.base ?? running.url), { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
    const text = await response.text();
    return { status: response.status, text, json: text ? JSON.parse(text) : undefined, location: response.headers.get('location'), etag: response.headers.get('etag') };
  };
  const signUp = (key: string, email = `someone-${randomUUID()}@example.com`) => ({ key, body: { name: 'Someone', email } });
  const identitiesWithEmail = async (email: string) => (await send('GET', `/api/v1/identity?email=${encodeURIComponent(email)}`, { token: adminToken })).json.length;

  beforeAll(async () => {
    running = await target.start();
    adminToken = await admin.signIn(running.url);
  });

  afterAll(async () => {
    await running?.close();
  });

  it('answers an anonymous sign-up retried with its key with the first answer, one identity', async () => {
    const { key, body } = signUp(randomUUID());
    const first = await send('POST', '/api/v1/identity', { key, body });
    const retry = await send('POST', '/api/v1/identity', { key, body });
    expect(first.status).toBe(201);
    expect(seen(retry)).toEqual(seen(first));
    expect(await identitiesWithEmail(body.email)).toBe(1);
  });

  it('refuses a sign-up key sent again with another body (422)', async () => {
    const { key, body } = signUp(randomUUID());
    await send('POST', '/api/v1/identity', { key, body });
    const other = signUp(key);
    const reused = await send('POST', '/api/v1/identity', { key, body: other.body });
    expect(reused.status).toBe(422);
    expect(reused.json).toMatchObject({ code: 'PLATFORM_IDEMPOTENCY_KEY_REUSED' });
    expect(await identitiesWithEmail(other.body.email)).toBe(0);
  });

  it("never answers another caller from a key: the admin's same key and body is a create of its own", async () => {
    const { key, body } = signUp(randomUUID());
    const anonymous = await send('POST', '/api/v1/identity', { key, body });
    const byAdmin = await send('POST', '/api/v1/identity', { key, body, token: adminToken });
    expect(anonymous.status).toBe(201);
    // It ran (not replayed): the email is the anonymous caller's now.
    expect(byAdmin.status).toBe(422);
    expect(byAdmin.json).toMatchObject({ code: 'IDENTITY_EMAIL_TAKEN' });
  });

  it('creates one credential of a retried create, and replays it', async () => {
    const identity = await send('POST', '/api/v1/identity', signUp(randomUUID()));
    const body = { identity_id: identity.json[0].id, provider: 'API_KEY', secret: randomBytes(32).toString('base64url') };
    const key = randomUUID();
    const first = await send('POST', '/api/v1/credentials', { key, body, token: adminToken });
    const retry = await send('POST', '/api/v1/credentials', { key, body, token: adminToken });
    expect(first.status).toBe(201);
    expect(seen(retry)).toEqual(seen(first));
    const list = await send('GET', `/api/v1/credentials?identity_id=${identity.json[0].id}`, { token: adminToken });
    expect(list.json).toHaveLength(1);
    // Another secret under the key is another request.
    const other = await send('POST', '/api/v1/credentials', { key, body: { ...body, secret: randomBytes(32).toString('base64url') }, token: adminToken });
    expect(other.status).toBe(422);
    expect(other.json).toMatchObject({ code: 'PLATFORM_IDEMPOTENCY_KEY_REUSED' });
  });

  it("replays an OAuth client's registration without its secret, which is shown once", async () => {
    const key = randomUUID();
    const body = { name: `app-${randomUUID()}`, type: 'confidential', redirect_uris: ['https://app.example.com/callback'] };
    const first = await send('POST', '/api/v1/sso/clients', { key, body, token: adminToken });
    const retry = await send('POST', '/api/v1/sso/clients', { key, body, token: adminToken });
    expect(first.status).toBe(201);
    expect(first.json[0].client_secret).toEqual(expect.any(String));
    expect(retry.status).toBe(201);
    expect(retry.location).toBe(first.location);
    const { client_secret: _secret, ...withoutSecret } = first.json[0];
    expect(retry.json).toEqual([withoutSecret]);
    expect(retry.text).not.toContain(first.json[0].client_secret);
    const clients = await send('GET', '/api/v1/sso/clients?limit=100', { token: adminToken });
    expect(clients.json.filter((client: { name: string }) => client.name === body.name)).toHaveLength(1);
  });

  it('creates one record of a generic domain retried with its key', async () => {
    const key = randomUUID();
    const body = { name: `Banana ${randomUUID().slice(0, 8)}`, price: 1.5, description: 'Yellow and sweet', stock: 120, category: 'Fruits', perishable: true };
    const first = await send('POST', '/api/v1/products', { key, body, token: adminToken });
    const retry = await send('POST', '/api/v1/products', { key, body, token: adminToken });
    expect(first.status).toBe(201);
    expect(seen(retry)).toEqual(seen(first));
    const list = await send('GET', `/api/v1/products?name=${encodeURIComponent(body.name)}`, { token: adminToken });
    expect(list.json).toHaveLength(1);
  });

  itIf(target.replicated, 'needs two replicas of the service (the real servers)')('replays a create retried on the other replica (as after a 502 from a replica that died)', async () => {
    const body = { name: `Cherry ${randomUUID().slice(0, 8)}`, price: 3, description: 'Red', stock: 5, category: 'Fruits', perishable: true };
    const key = randomUUID();
    const [one, two] = running.replicas!.crud;
    const first = await send('POST', '/api/v1/products', { key, body, token: adminToken, base: one });
    const retry = await send('POST', '/api/v1/products', { key, body, token: adminToken, base: two });
    expect(first.status).toBe(201);
    expect(seen(retry)).toEqual(seen(first));
    const signUpKey = randomUUID();
    const identity = signUp(signUpKey);
    const [identityOne, identityTwo] = running.replicas!.identity;
    const created = await send('POST', '/api/v1/identity', { ...identity, base: identityOne });
    expect(seen(await send('POST', '/api/v1/identity', { ...identity, base: identityTwo }))).toEqual(seen(created));
    expect(await identitiesWithEmail(identity.body.email)).toBe(1);
  });
});
