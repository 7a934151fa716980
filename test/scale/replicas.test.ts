// Split mode with two replicas of every service on the real servers, as `npm run start:split
// -- --replicas 2` runs it: the guarantees that only hold if the replicas agree through the
// database, Redis and NATS (issue 12). Each test reaches replicas directly as well as through
// the gateway, so "another replica" is certain, not left to the balancer.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createNatsBus, type Bus, type BusMessage } from '@app/platform';
import { startSplit, type SplitCluster } from '@app/split';
import { createTestDatabase, describeIf, eventually, NEEDS_REAL_SERVERS, REAL, readJson, SETTLE_BUDGET_MS, START_BUDGET_MS, silentLogger, type Json } from '@app/testing';
import { CLUSTER_ENV } from '../support/replicas.js';

const real = REAL.databaseUrl && REAL.redisUrl && REAL.natsUrl ? REAL : undefined;

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const JSON_BODY = { 'content-type': 'application/json' };
const PRODUCT = { name: 'Banana', price: 1.5, description: 'Yellow and sweet', stock: 120, category: 'Fruits', perishable: true };

/** "1x 200, 49x 400" */
const tally = (statuses: number[]) =>
  [...new Set(statuses)]
    .sort()
    .map((status) => `${statuses.filter((s) => s === status).length}x ${status}`)
    .join(', ');

/** Removes a durable consumer a test made on the shared server's stream. */
async function deleteConsumer(durable: string) {
  const nc = await connect({ servers: real!.natsUrl!.split(',') });
  try {
    await (await jetstreamManager(nc)).consumers.delete('EVENTS', durable);
  } finally {
    await nc.close();
  }
}

const kidOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { kid: string }).kid;

describeIf(real, NEEDS_REAL_SERVERS)('split mode, 2 replicas of every service, on the real servers', () => {
  let db: { url: string; drop(): Promise<void> };
  let cluster: SplitCluster;
  const admin = { email: `admin-${randomUUID()}@example.com`, password: randomBytes(18).toString('base64url') };
  /** Lines the processes printed, for a failure's message. */
  const output: string[] = [];
  /** What each test measured, printed once at the end for the issue's note. */
  const figures: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(real!.databaseUrl!);
    cluster = await startSplit({
      replicas: 2,
      port: 0,
      readyTimeoutMs: START_BUDGET_MS / 2,
      output: (name, line) => void output.push(`[${name}] ${line}`),
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: db.url,
        REDIS_URL: real!.redisUrl,
        NATS_URL: real!.natsUrl,
        LOG_LEVEL: 'warn',
        ...CLUSTER_ENV,
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
  }, 2 * START_BUDGET_MS);

  afterAll(async () => {
    if (figures.length) console.log(`split mode, 2 replicas of every service:\n${figures.map((line) => `- ${line}`).join('\n')}`);
    const clean = await cluster?.stop();
    await db?.drop();
    if (clean === false) throw new Error(`a process did not exit 0 on SIGTERM:\n${output.slice(-40).join('\n')}`);
  });

  const token = async (fields: Record<string, string>, base = cluster.url) => {
    const response = await fetch(`${base}/api/v1/sso/token`, { method: 'POST', headers: FORM, body: new URLSearchParams(fields) });
    return { status: response.status, body: await readJson(response) };
  };
  /** Signs the admin in, waiting for sso's bootstrap (one replica creates it) on a first call. */
  const signIn = async (base = cluster.url): Promise<Json> => {
    const deadline = Date.now() + SETTLE_BUDGET_MS;
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

  /** A URL on each verifier of a token: the gateway, and both replicas of every service. */
  const verifiers = (sub: string) => [
    `${cluster.url}/api/v1/products?limit=1`,
    ...cluster.replicas.crud.map((base) => `${base}/api/v1/products?limit=1`),
    ...cluster.replicas.identity.map((base) => `${base}/api/v1/identity/${sub}`),
    ...cluster.replicas.credentials.map((base) => `${base}/api/v1/credentials?identity_id=${sub}`),
    ...cluster.replicas.sso.map((base) => `${base}/api/v1/sso/userinfo`),
  ];
  /** "crud#2" for a replica's URL, "gateway" for the edge. */
  const nameOf = (url: string) => {
    const origin = new URL(url).origin;
    if (origin === new URL(cluster.url).origin) return 'gateway';
    for (const [service, urls] of Object.entries(cluster.replicas)) {
      const index = urls.findIndex((base) => new URL(base).origin === origin);
      if (index >= 0) return `${service}#${index + 1}`;
    }
    return origin;
  };

  it('lets exactly one of 50 concurrent refreshes of one refresh token win, across both sso replicas', async () => {
    const session = await signIn();
    const bases = [cluster.url, ...cluster.replicas.sso];
    const started = Date.now();
    const replies = await Promise.all(
      Array.from({ length: 50 }, (_, index) => token({ grant_type: 'refresh_token', refresh_token: String(session.refresh_token) }, bases[index % bases.length])),
    );
    const statuses = replies.map((reply) => reply.status);
    figures.push(`50 concurrent refreshes of one token (gateway and both sso replicas): ${tally(statuses)} in ${Date.now() - started} ms`);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 400)).toHaveLength(49);
    for (const reply of replies.filter((r) => r.status === 400)) expect(reply.body.error).toBe('invalid_grant');
    // Each loser presented a spent token: reuse detection ended the sign-in, the winner's new
    // refresh token included, however the race went.
    const winner = replies.find((reply) => reply.status === 200)!;
    expect((await token({ grant_type: 'refresh_token', refresh_token: String(winner.body.refresh_token) })).body.error).toBe('invalid_grant');
  });

  it('ends the sign-in on a reused refresh token whichever sso replica wins a two-way race', async () => {
    const [first, second] = cluster.replicas.sso as [string, string];
    const outcomes: string[] = [];
    const ROUNDS = 20;
    for (let round = 0; round < ROUNDS; round++) {
      const session = await signIn(first);
      const replies = await Promise.all([first, second].map((base) => token({ grant_type: 'refresh_token', refresh_token: String(session.refresh_token) }, base)));
      const winner = replies.find((reply) => reply.status === 200);
      // Both replies are in: the loser's revocation has committed, and the winner's new token too.
      const next = winner && (await token({ grant_type: 'refresh_token', refresh_token: String(winner.body.refresh_token) }, round % 2 ? first : second));
      outcomes.push(`${replies.map((reply) => reply.status).join('/')}, then the winner's token: ${next?.status ?? 'none'}`);
      if (!winner || next?.status !== 400) continue;
      // The winner's access token shares the sign-in's sid: refused too.
      const refused = await eventually(async () => (await fetch(`${cluster.url}/api/v1/products?limit=1`, { headers: bearer(String(winner.body.access_token)) })).status === 401, SETTLE_BUDGET_MS, 20);
      if (!refused) outcomes.push(`round ${round}: the winner's access token is still accepted`);
    }
    figures.push(`${ROUNDS} two-way refresh races across sso#1/sso#2: ${[...new Set(outcomes)].map((o) => `${outcomes.filter((x) => x === o).length}x ${o}`).join('; ')}`);
    expect(outcomes.filter((outcome) => !/^(200\/400|400\/200), then the winner's token: 400$/.test(outcome))).toEqual([]);
  });

  it('never answers an old value after an update, written through the gateway or one crud replica and read through the others', async () => {
    const { access_token: access } = await signIn();
    const product = await createProduct(String(access));
    const [first, second] = cluster.replicas.crud as [string, string];
    const everywhere = [first, second, cluster.url];
    const read = async (base: string) => {
      const response = await fetch(`${base}/api/v1/products/${String(product.id)}`, { headers: bearer(String(access)) });
      expect(response.status).toBe(200);
      return ((await readJson(response)) as unknown as Json[])[0]?.price as unknown;
    };
    const stale: string[] = [];
    let reads = 0;
    const ROUNDS = 60;
    for (let round = 1; round <= ROUNDS; round++) {
      // Writes go through each crud replica and the gateway in turn.
      const writer = everywhere[round % 3]!;
      // Every read first, so each replica has the record cached before it changes.
      for (const base of everywhere) await read(base);
      const price = round + 0.25;
      const updated = await fetch(`${writer}/api/v1/products/${String(product.id)}`, {
        method: 'PUT',
        headers: { ...bearer(String(access)), ...JSON_BODY },
        body: JSON.stringify({ price }),
      });
      expect(updated.status).toBe(200);
      // The other replica first: it is the one whose cache must not answer.
      for (const base of [...everywhere.filter((base) => base !== writer && base !== cluster.url), cluster.url]) {
        reads++;
        const seen = await read(base);
        if (seen !== price) stale.push(`round ${round}: ${base} answered ${String(seen)} after ${price} was written through ${writer}`);
      }
    }
    figures.push(`read-your-writes: ${ROUNDS} updates (through crud#1, crud#2, the gateway in turn), ${reads} reads right after, ${stale.length} stale`);
    expect(stale).toEqual([]);
  });

  it('signs with rotated keys on both sso replicas while every verifier accepts old and new tokens', async () => {
    const before = String((await signIn()).access_token);
    const me = JSON.parse(Buffer.from(before.split('.')[1]!, 'base64url').toString()) as { sub: string };
    // Each verifier: the edge, and both replicas of every service, sso's own token check included.
    const where = verifiers(me.sub);
    const statuses = (access: string) => Promise.all(where.map(async (url) => (await fetch(url, { headers: bearer(access) })).status));
    const refused: string[] = [];
    const kids = new Map<string, Set<string>>();
    let checks = 0;
    const deadline = Date.now() + 40_000;
    // Until each sso replica has signed with at least two keys, and then 2 s more.
    let doneAt: number | undefined;
    while (Date.now() < (doneAt ?? deadline)) {
      for (const sso of cluster.replicas.sso) {
        const access = String((await signIn(sso)).access_token);
        (kids.get(sso) ?? kids.set(sso, new Set()).get(sso)!).add(kidOf(access));
        for (const [index, status] of (await statuses(access)).entries()) if (status !== 200) refused.push(`${where[index]} refused a token of ${sso} (kid ${kidOf(access)}): ${status}`);
        checks += where.length;
      }
      for (const [index, status] of (await statuses(before)).entries()) if (status !== 200) refused.push(`${where[index]} refused the token from before the rotation: ${status}`);
      checks += where.length;
      if (doneAt === undefined && cluster.replicas.sso.every((sso) => (kids.get(sso)?.size ?? 0) >= 2)) doneAt = Date.now() + 2_000;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    // Both replicas' JWKS, read at once (again, if a rotation fell between the two reads).
    const jwks = () =>
      Promise.all(
        cluster.replicas.sso.map(async (sso) => ((await readJson(await fetch(`${sso}/api/v1/sso/jwks`))).keys as { kid: string }[]).map((key) => key.kid).sort()),
      );
    let published = await jwks();
    for (let attempt = 0; attempt < 3 && JSON.stringify(published[0]) !== JSON.stringify(published[1]); attempt++) published = await jwks();
    const allKids = new Set([...kids.values()].flatMap((set) => [...set]));
    figures.push(
      `key rotation every 8 s: ${allKids.size} signing keys seen (${cluster.replicas.sso.map((sso, index) => `sso#${index + 1} signed with ${kids.get(sso)?.size ?? 0}`).join(', ')}), ` +
        `${checks} checks on ${where.length} verifiers, ${refused.length} refused`,
    );
    expect(doneAt).toBeDefined();
    expect(refused).toEqual([]);
    // One key set: both replicas publish the same keys, and every key either one signed with.
    expect(published[1]).toEqual(published[0]);
    expect(published[0]).toEqual(expect.arrayContaining([...allKids]));
  });

  it('publishes each event of the two outbox relays exactly once', async () => {
    const { access_token: access } = await signIn();
    const bus: Bus = await createNatsBus({ servers: real!.natsUrl!, logger: silentLogger(), name: 'scale-test' });
    // A group of this test's own: a durable consumer that sees every event from now on, once per
    // delivery. And a broadcast (core NATS), which hears every publish, JetStream's duplicates too.
    const group = `scale-${randomUUID()}`;
    const delivered = new Map<string, number>();
    const publishedTimes = new Map<string, number>();
    const byProduct = (counts: Map<string, number>) => async (message: BusMessage) => {
      const id = String((message.data as { id?: unknown }).id);
      counts.set(id, (counts.get(id) ?? 0) + 1);
    };
    const eventIds = new Map<string, Set<string>>();
    try {
      const durable = await bus.subscribe(
        'crud.product.created',
        async (message) => {
          await byProduct(delivered)(message);
          const id = String((message.data as { id?: unknown }).id);
          (eventIds.get(id) ?? eventIds.set(id, new Set()).get(id)!).add(message.id);
        },
        { group },
      );
      const broadcast = await bus.subscribe('crud.product.created', byProduct(publishedTimes), { broadcast: true });
      const started = Date.now();
      const ids = await Promise.all(Array.from({ length: 60 }, async (_, index) => String((await createProduct(String(access), cluster.replicas.crud[index % 2])).id)));
      const deadline = Date.now() + SETTLE_BUDGET_MS;
      while (ids.some((id) => !delivered.has(id)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      const allDeliveredMs = Date.now() - started;
      // Time for a duplicate to arrive, had a relay published one.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await durable.unsubscribe();
      await broadcast.unsubscribe();
      figures.push(
        `outbox: 60 products created through both crud replicas at once; ${ids.filter((id) => delivered.get(id) === 1).length} delivered exactly once ` +
          `to a new group within ${allDeliveredMs} ms of the first request, ${ids.reduce((sum, id) => sum + (publishedTimes.get(id) ?? 0), 0)} publishes seen on the subject`,
      );
      expect(ids.filter((id) => delivered.get(id) !== 1)).toEqual([]);
      expect(ids.filter((id) => eventIds.get(id)?.size !== 1)).toEqual([]);
      // Neither relay published an event the other had: each row was locked by one of them.
      expect(ids.filter((id) => publishedTimes.get(id) !== 1)).toEqual([]);
    } finally {
      await bus.close();
      await deleteConsumer(`${group}-crud.product.created`.replace(/[^\w-]/g, '_'));
    }
  });

  it('refuses a revoked sign-in on every replica of every verifier', async () => {
    const session = await signIn();
    const access = String(session.access_token);
    const me = JSON.parse(Buffer.from(access.split('.')[1]!, 'base64url').toString()) as { sub: string };
    const where = verifiers(me.sub);
    for (const url of where) expect((await fetch(url, { headers: bearer(access) })).status).toBe(200);
    const revoked = await fetch(`${cluster.replicas.sso[1]}/api/v1/sso/revoke`, { method: 'POST', headers: FORM, body: new URLSearchParams({ token: String(session.refresh_token) }) });
    expect(revoked.status).toBe(200);
    const at = Date.now();
    const reached = await Promise.all(
      where.map(async (url) => {
        for (;;) {
          const status = (await fetch(url, { headers: bearer(access) })).status;
          if (status === 401) return { url, ms: Date.now() - at };
          if (Date.now() - at > SETTLE_BUDGET_MS) return { url, ms: Infinity };
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      }),
    );
    figures.push(`revocation (through sso#2) refused by each verifier after: ${reached.map((r) => `${nameOf(r.url)} ${r.ms} ms`).join(', ')}`);
    // Issue 11's bound (within 1 s) is measured by `npm run bench`; here each must refuse it.
    expect(reached.filter((r) => r.ms === Infinity)).toEqual([]);
  });

  it('creates one identity of 20 concurrent sign-ups with one email, through both identity replicas', async () => {
    const email = `race-${randomUUID()}@example.com`;
    const bases = [cluster.url, ...cluster.replicas.identity];
    const replies = await Promise.all(
      Array.from({ length: 20 }, async (_, index) => {
        const response = await fetch(`${bases[index % bases.length]}/api/v1/identity`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ name: 'Racer', email }) });
        return { status: response.status, body: await readJson(response) };
      }),
    );
    const statuses = replies.map((reply) => reply.status);
    figures.push(`20 concurrent sign-ups with one email (gateway and both identity replicas): ${tally(statuses)}`);
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 422)).toHaveLength(19);
    for (const reply of replies.filter((r) => r.status === 422)) expect(reply.body.code).toBe('IDENTITY_EMAIL_TAKEN');
  });
});
