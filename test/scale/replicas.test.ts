// Split mode with two replicas of every service on the real servers, as `npm run start:split
// -- --replicas 2` runs it: the guarantees that only hold if the replicas agree through the
// database, Redis and NATS (issue 12). Each test reaches replicas directly as well as through
// the gateway, so "another replica" is certain, not left to the balancer.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createNatsBus, type Bus } from '@app/platform';
import { startSplit, type SplitCluster } from '@app/split';
import { createTestDatabase, REAL, readJson, silentLogger, type Json } from '@app/testing';

const real = REAL.databaseUrl && REAL.redisUrl && REAL.natsUrl ? REAL : undefined;

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_BODY = { 'content-type': 'application/json' };
const PRODUCT = { name: 'Banana', price: 1.5, description: 'Yellow and sweet', stock: 120, category: 'Fruits', perishable: true };
/** Issue 11: a revocation reaches every verifier within 1 s. */
const REVOCATION_BOUND_MS = 1_000;

const kidOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { kid: string }).kid;

(real ? describe : describe.skip)('split mode, 2 replicas of every service, on the real servers', () => {
  let db: { url: string; drop(): Promise<void> };
  let cluster: SplitCluster;
  const admin = { email: `admin-${randomUUID()}@example.com`, password: randomBytes(18).toString('base64url') };
  /** Lines the processes printed, for a failure's message. */
  const output: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(real!.databaseUrl!);
    cluster = await startSplit({
      replicas: 2,
      port: 0,
      output: (name, line) => void output.push(`[${name}] ${line}`),
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: db.url,
        REDIS_URL: real!.redisUrl,
        NATS_URL: real!.natsUrl,
        LOG_LEVEL: 'warn',
        // This run's own Redis keys (sign-up counters, cached records), whatever ran before on this Redis.
        CACHE_KEY_PREFIX: `scale:${randomUUID().slice(0, 8)}:`,
        BOOTSTRAP_ADMIN_EMAIL: admin.email,
        BOOTSTRAP_ADMIN_PASSWORD: admin.password,
        // sso rotates its signing key every 8 s (checked every 2 s) and publishes a new key 2 s
        // before signing with it; verifiers refetch an unknown kid after 1 s. So every test
        // below also runs across key rotations made by one sso replica or the other.
        SSO_KEY_ROTATION_INTERVAL_SECONDS: '8',
        SSO_KEY_ACTIVATION_DELAY_SECONDS: '2',
        JWKS_COOLDOWN_SECONDS: '1',
      },
    });
  }, 180_000);

  afterAll(async () => {
    const clean = await cluster?.stop();
    await db?.drop();
    if (clean === false) throw new Error(`a process did not exit 0 on SIGTERM:\n${output.slice(-40).join('\n')}`);
  }, 60_000);

  const token = async (fields: Record<string, string>, base = cluster.url) => {
    const response = await fetch(`${base}/api/v1/sso/token`, { method: 'POST', headers: FORM, body: new URLSearchParams(fields) });
    return { status: response.status, body: await readJson(response) };
  };
  /** Signs the admin in, waiting for sso's bootstrap (one replica creates it) on a first call. */
  const signIn = async (base = cluster.url): Promise<Json> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const reply = await token({ grant_type: 'password', username: admin.email, password: admin.password }, base);
      if (reply.status === 200) return reply.body;
      if (Date.now() > deadline) throw new Error(`the admin cannot sign in: ${reply.status} ${JSON.stringify(reply.body)}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  const bearer = (access: string) => ({ authorization: `Bearer ${access}` });
  const createProduct = async (access: string, base = cluster.url) => {
    const response = await fetch(`${base}/api/v1/products`, { method: 'POST', headers: { ...bearer(access), ...JSON_BODY }, body: JSON.stringify(PRODUCT) });
    expect(response.status).toBe(201);
    return ((await readJson(response)) as unknown as Json[])[0]!;
  };

  it('lets exactly one of 50 concurrent refreshes of one refresh token win, across both sso replicas', async () => {
    const session = await signIn();
    const bases = [cluster.url, ...cluster.replicas.sso];
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, index) => token({ grant_type: 'refresh_token', refresh_token: String(session.refresh_token) }, bases[index % bases.length])),
    );
    const statuses = replies.map((reply) => reply.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 400)).toHaveLength(49);
    for (const reply of replies.filter((r) => r.status === 400)) expect(reply.body.error).toBe('invalid_grant');
  });

  it('never answers an old value after an update, written through one crud replica and read through the other', async () => {
    const { access_token: access } = await signIn();
    const product = await createProduct(String(access));
    const [first, second] = cluster.replicas.crud as [string, string];
    const stale: string[] = [];
    for (let round = 1; round <= 40; round++) {
      const [writer, reader] = round % 2 ? [first, second] : [second, first];
      // Every read first, so each replica has the record cached before it changes.
      for (const base of [first, second, cluster.url]) {
        const warm = await fetch(`${base}/api/v1/products/${String(product.id)}`, { headers: bearer(String(access)) });
        expect(warm.status).toBe(200);
      }
      const price = round + 0.25;
      const updated = await fetch(`${writer}/api/v1/products/${String(product.id)}`, {
        method: 'PUT',
        headers: { ...bearer(String(access)), ...JSON_BODY },
        body: JSON.stringify({ price }),
      });
      expect(updated.status).toBe(200);
      for (const base of [reader, cluster.url]) {
        const read = await fetch(`${base}/api/v1/products/${String(product.id)}`, { headers: bearer(String(access)) });
        const body = (await readJson(read)) as unknown as Json[];
        if (body[0]?.price !== price) stale.push(`round ${round}: ${base} answered ${String(body[0]?.price)} after ${price} was written through ${writer}`);
      }
    }
    expect(stale).toEqual([]);
  }, 60_000);

  it('signs with rotated keys on both sso replicas while every verifier accepts old and new tokens', async () => {
    const before = String((await signIn()).access_token);
    const me = JSON.parse(Buffer.from(before.split('.')[1]!, 'base64url').toString()) as { sub: string };
    // Each verifier: the edge, both identity replicas, both crud replicas.
    const where = [
      `${cluster.url}/api/v1/identity/${me.sub}`,
      ...cluster.replicas.identity.map((base) => `${base}/api/v1/identity/${me.sub}`),
      ...cluster.replicas.crud.map((base) => `${base}/api/v1/products?limit=1`),
    ];
    const statuses = (access: string) => Promise.all(where.map(async (url) => (await fetch(url, { headers: bearer(access) })).status));
    const refused: string[] = [];
    const kids = new Map<string, Set<string>>();
    const deadline = Date.now() + 40_000;
    // Until each sso replica has signed with at least two keys, and then 2 s more.
    let doneAt: number | undefined;
    while (Date.now() < (doneAt ?? deadline)) {
      for (const sso of cluster.replicas.sso) {
        const access = String((await signIn(sso)).access_token);
        (kids.get(sso) ?? kids.set(sso, new Set()).get(sso)!).add(kidOf(access));
        for (const [index, status] of (await statuses(access)).entries()) if (status !== 200) refused.push(`${where[index]} refused a token of ${sso} (kid ${kidOf(access)}): ${status}`);
      }
      for (const [index, status] of (await statuses(before)).entries()) if (status !== 200) refused.push(`${where[index]} refused the token from before the rotation: ${status}`);
      if (doneAt === undefined && cluster.replicas.sso.every((sso) => (kids.get(sso)?.size ?? 0) >= 2)) doneAt = Date.now() + 2_000;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(doneAt).toBeDefined();
    expect(refused).toEqual([]);
  }, 60_000);

  it('publishes each event of the two outbox relays exactly once', async () => {
    const { access_token: access } = await signIn();
    const bus: Bus = await createNatsBus({ servers: real!.natsUrl!, logger: silentLogger(), name: 'scale-test' });
    const deliveries = new Map<string, number>();
    const created = new Map<string, number>();
    try {
      // A group of this test's own: a durable consumer that sees every event from now on, once per delivery.
      const subscription = await bus.subscribe(
        'crud.product.created',
        async (message) => {
          deliveries.set(message.id, (deliveries.get(message.id) ?? 0) + 1);
          const id = String((message.data as { id?: unknown }).id);
          created.set(id, (created.get(id) ?? 0) + 1);
        },
        { group: `scale-${randomUUID()}` },
      );
      const ids = await Promise.all(Array.from({ length: 60 }, async (_, index) => String((await createProduct(String(access), cluster.replicas.crud[index % 2])).id)));
      const deadline = Date.now() + 15_000;
      while (ids.some((id) => !created.has(id)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      // Time for a duplicate to arrive, had a second relay published one.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await subscription.unsubscribe();
      expect(ids.filter((id) => created.get(id) !== 1)).toEqual([]);
      expect([...deliveries.values()].filter((count) => count !== 1)).toEqual([]);
    } finally {
      await bus.close();
    }
  }, 60_000);

  it('refuses a revoked sign-in on every replica of every verifier within 1 s', async () => {
    const session = await signIn();
    const access = String(session.access_token);
    const me = JSON.parse(Buffer.from(access.split('.')[1]!, 'base64url').toString()) as { sub: string };
    const where = [
      `${cluster.url}/api/v1/products?limit=1`,
      ...cluster.replicas.crud.map((base) => `${base}/api/v1/products?limit=1`),
      ...cluster.replicas.identity.map((base) => `${base}/api/v1/identity/${me.sub}`),
      ...cluster.replicas.credentials.map((base) => `${base}/api/v1/credentials?identity_id=${me.sub}`),
    ];
    for (const url of where) expect((await fetch(url, { headers: bearer(access) })).status).toBe(200);
    const revoked = await fetch(`${cluster.replicas.sso[1]}/api/v1/sso/revoke`, { method: 'POST', headers: FORM, body: new URLSearchParams({ token: String(session.refresh_token) }) });
    expect(revoked.status).toBe(200);
    const at = Date.now();
    const reached = await Promise.all(
      where.map(async (url) => {
        for (;;) {
          const status = (await fetch(url, { headers: bearer(access) })).status;
          if (status === 401) return { url, ms: Date.now() - at };
          if (Date.now() - at > 5_000) return { url, ms: Infinity };
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }),
    );
    // The figures for the issue's note.
    console.log(`revocation reached each verifier after: ${reached.map((r) => `${r.url.replace(/\/api.*$/, '')} ${r.ms} ms`).join(', ')}`);
    expect(reached.filter((r) => r.ms > REVOCATION_BOUND_MS)).toEqual([]);
  });

  it('creates one identity of 20 concurrent sign-ups with one email, through both identity replicas', async () => {
    const email = `race-${randomUUID()}@example.com`;
    const bases = [cluster.url, ...cluster.replicas.identity];
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async (_, index) => {
        const response = await fetch(`${bases[index % bases.length]}/api/v1/identity`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ name: 'Racer', email }) });
        return response.status;
      }),
    );
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 422)).toHaveLength(19);
  });
});
