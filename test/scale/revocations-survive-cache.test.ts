// Issue 25, point 3: revocations survive the cache. sso's database is the record of what it
// revoked; every verifier seeds its set from sso at start (and is not ready until it could),
// so a verifier started after Redis restarted empty still refuses every token revoked before.
// Split mode on real processes, with a redis-server of this test's own that it empties and
// restarts (never the shared one), its own database and its own NATS stream.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createConnection } from 'node:net';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { startSplit, type SplitCluster } from '@app/split';
import { createTestDatabase, describeIf, eventually, freePort, READY_BUDGET_MS, REAL, readJson, SETTLE_BUDGET_MS, startOwnRedis, startTcpProxy, type Json } from '@app/testing';

const real = REAL.databaseUrl && REAL.natsUrl ? REAL : undefined;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const ROOT = new URL('../../', import.meta.url).pathname;

/** Sends one command to a redis-server (inline protocol) and resolves with its first reply line. */
const redisCommand = (url: string, command: string) =>
  new Promise<string>((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const socket = createConnection(Number(port), hostname, () => socket.write(`${command}\r\n`));
    socket.setEncoding('utf8');
    socket.once('data', (reply: string) => {
      resolve(reply.split('\r\n')[0]!);
      socket.end();
    });
    socket.once('error', reject);
  });

describeIf(real, 'needs a real Postgres and NATS: set DATABASE_URL and NATS_URL')('revocations survive the cache (split mode, real processes)', () => {
  let db: { url: string; drop(): Promise<void> };
  let redis: Awaited<ReturnType<typeof startOwnRedis>>;
  let cluster: SplitCluster;
  const stream = `REVOKED_${randomUUID().slice(0, 8).toUpperCase()}`;
  const admin = { email: `admin-${randomUUID()}@example.com`, password: randomBytes(18).toString('base64url') };
  const output: string[] = [];
  let env: Record<string, string | undefined>;
  const extra: ChildProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(real!.databaseUrl!);
    redis = await startOwnRedis();
    env = {
      PATH: process.env.PATH,
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      NATS_URL: real!.natsUrl,
      NATS_STREAM: stream,
      LOG_LEVEL: 'warn',
      BOOTSTRAP_ADMIN_EMAIL: admin.email,
      BOOTSTRAP_ADMIN_PASSWORD: admin.password,
    };
    cluster = await startSplit({ replicas: 1, port: 0, env, output: (name, line) => void output.push(`[${name}] ${line}`) });
  });

  afterAll(async () => {
    for (const child of extra) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await cluster?.stop();
    await redis?.stop();
    await db?.drop();
    const nc = await connect({ servers: real!.natsUrl!.split(',') });
    try {
      await (await jetstreamManager(nc)).streams.delete(stream).catch(() => undefined);
    } finally {
      await nc.close();
    }
  });

  const token = async (fields: Record<string, string>) => {
    const response = await fetch(`${cluster.url}/api/v1/sso/token`, { method: 'POST', headers: FORM, body: new URLSearchParams(fields) });
    return { status: response.status, body: await readJson(response) };
  };
  /** Signs the admin in, waiting for sso's bootstrap on a first call. */
  const signIn = async (): Promise<Json> => {
    const deadline = Date.now() + SETTLE_BUDGET_MS;
    for (;;) {
      const reply = await token({ grant_type: 'password', username: admin.email, password: admin.password });
      if (reply.status === 200) return reply.body;
      if (Date.now() > deadline) throw new Error(`the admin cannot sign in: ${reply.status} ${JSON.stringify(reply.body)}\n${output.slice(-20).join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  const statusOf = async (url: string, access: string) => (await fetch(url, { headers: { authorization: `Bearer ${access}` } })).status;
  const readiness = async (base: string) => (await fetch(`${base}/health/readiness`).catch(() => undefined))?.status;

  it('refuses a token revoked before Redis restarted empty, on a crud replica restarted since, and is not ready while sso cannot answer', async () => {
    const crud = cluster.replicas.crud[0]!;
    const products = `${crud}/api/v1/products?limit=1`;
    const revoked = await signIn();
    const kept = await signIn();
    expect(await statusOf(products, String(revoked.access_token))).toBe(200);

    // RFC 7009: the sign-in ends, its access tokens with it.
    const answer = await fetch(`${cluster.url}/api/v1/sso/revoke`, { method: 'POST', headers: FORM, body: new URLSearchParams({ token: String(revoked.refresh_token) }) });
    expect(answer.status).toBe(200);
    expect(await eventually(async () => (await statusOf(products, String(revoked.access_token))) === 401, SETTLE_BUDGET_MS, 100)).toBe(true);

    // Redis emptied, then restarted empty (compose runs it without a volume).
    expect(await redisCommand(redis.url, 'FLUSHALL')).toBe('+OK');
    await redis.stop();
    await redis.start();
    expect(await redisCommand(redis.url, 'DBSIZE')).toBe(':0');

    // The crud replica dies and is started again (split mode restarts it, as Kubernetes would).
    const member = cluster.processes.find((process) => process.name === 'crud#1')!;
    const before = member.child;
    before.kill('SIGKILL');
    await member.exited;
    expect(await eventually(async () => member.child !== before && (await readiness(crud)) === 200, READY_BUDGET_MS, 200)).toBe(true);
    expect(await statusOf(products, String(revoked.access_token))).toBe(401);
    expect(await statusOf(products, String(kept.access_token))).toBe(200);

    // Another crud process whose way to sso (the bus) is cut when it starts: it serves its
    // probes, but is not ready, and retries; once sso answers it is ready and refuses the token.
    const nats = new URL(real!.natsUrl!.split(',')[0]!);
    const proxy = await startTcpProxy({ host: nats.hostname, port: Number(nats.port || 4222) });
    await proxy.stop();
    const port = await freePort();
    const late = spawn(process.execPath, [`${ROOT}services/crud/dist/main.js`], {
      cwd: ROOT,
      env: {
        ...env,
        NATS_URL: `nats://127.0.0.1:${proxy.port}`,
        PORT: String(port),
        HOST: '127.0.0.1',
        SSO_URL: cluster.replicas.sso.join(','),
        IDENTITY_URL: cluster.replicas.identity.join(','),
        CREDENTIALS_URL: cluster.replicas.credentials.join(','),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    extra.push(late);
    for (const stream of [late.stdout!, late.stderr!]) stream.on('data', (chunk: Buffer) => void output.push(`[late crud] ${chunk.toString().trimEnd()}`));
    const lateUrl = `http://127.0.0.1:${port}`;
    try {
      expect(await eventually(async () => (await fetch(`${lateUrl}/health/liveness`).catch(() => undefined))?.status === 200, READY_BUDGET_MS, 200)).toBe(true);
      const unready = await fetch(`${lateUrl}/health/readiness`);
      expect(unready.status).toBe(503);
      expect(((await readJson(unready)).dependencies as Json).revocations).toMatchObject({ status: 'disconnected' });
      // Still not ready a while later: nothing changed for it.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(await readiness(lateUrl)).toBe(503);

      await proxy.start();
      expect(await eventually(async () => (await readiness(lateUrl)) === 200, READY_BUDGET_MS, 200)).toBe(true);
      expect(await statusOf(`${lateUrl}/api/v1/products?limit=1`, String(revoked.access_token))).toBe(401);
      expect(await statusOf(`${lateUrl}/api/v1/products?limit=1`, String(kept.access_token))).toBe(200);
    } finally {
      late.kill('SIGTERM');
      await new Promise((resolve) => (late.exitCode !== null ? resolve(undefined) : late.once('exit', resolve)));
      await proxy.stop();
    }
  });
});
