import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { appendFileSync, existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { crudConfig, crudService, type CrudConfig } from '@app/crud-service';
import { buildGateway } from '@app/gateway';
import { buildServiceApp, closeDependencies, listenApp, openDependencies, openPostgres, type App, type Dependencies, type RunningApp } from '@app/platform';
import {
  createTestDatabase,
  describeIf,
  eventually,
  fakePostgres,
  freePort,
  NEEDS_REAL_POSTGRES,
  NEEDS_REAL_SERVERS,
  READY_BUDGET_MS,
  REAL,
  SETTLE_BUDGET_MS,
  silentLogger,
  startFaultProxy,
  startTokenIssuer,
  testConfig,
  testModes,
  type FaultProxy,
  type TokenIssuer,
} from '@app/testing';
import { openPlatformDependencies, type PlatformDependencies } from '../support/platform.js';

/**
 * Issue 11 item 7: a dependency's fault never ends a process. Each dependency sits behind a
 * TCP proxy of the test's own, which cuts it (connections reset, new ones refused) or
 * blackholes it (nothing answers) while requests are in flight; the shared servers are never
 * touched.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const hostPort = (url: string) => ({ host: new URL(url).hostname, port: Number(new URL(url).port) });
const PROBLEM = 'application/problem+json; charset=utf-8';

const OAUTH_JSON = 'application/json; charset=utf-8';
const HTML = 'text/html; charset=utf-8';

/**
 * How a route answers an outage: problem+json (every API route), RFC 6749 JSON (the OAuth
 * endpoints: token, revoke, introspect) or an HTML page (the browser sign-in).
 */
type Shape = 'problem' | 'oauth' | 'page';

interface Answer {
  what: string;
  status: number;
  ms: number;
  shape: Shape;
  contentType?: string | null;
  retryAfter?: string | null;
  body?: string;
  id?: string;
}

/** One request and how it was answered; status 0 when it got no answer at all (a reset, or more than 15 s). */
async function call(url: string, what: string, init: RequestInit = {}, shape: Shape = 'problem'): Promise<Answer> {
  const started = Date.now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
    const body = await response.text();
    return {
      what,
      shape,
      status: response.status,
      ms: Date.now() - started,
      contentType: response.headers.get('content-type'),
      retryAfter: response.headers.get('retry-after'),
      body,
    };
  } catch (error) {
    return { what, shape, status: 0, ms: Date.now() - started, body: String(error) };
  }
}

/** A 503 as its route promises it in an outage: its shape, `Retry-After`, and `temporarily_unavailable` from OAuth. */
function isUnavailableAnswer(a: Answer): boolean {
  if (a.status !== 503 || a.retryAfter === null) return false;
  if (a.shape === 'problem') return a.contentType === PROBLEM;
  if (a.shape === 'page') return a.contentType === HTML;
  return a.contentType === OAUTH_JSON && (JSON.parse(a.body!) as { error?: string }).error === 'temporarily_unavailable';
}

const form = (fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  body: new URLSearchParams(fields).toString(),
});

/** Runs `request` `concurrency` at a time until stopped; keeps every answer. */
function load(request: (n: number) => Promise<Answer>, concurrency: number) {
  const answers: Answer[] = [];
  let running = true;
  let n = 0;
  const workers = Array.from({ length: concurrency }, async () => {
    while (running) {
      answers.push(await request(n++));
      await delay(5);
    }
  });
  return {
    answers,
    stop: async () => {
      running = false;
      await Promise.all(workers);
      return answers;
    },
  };
}

/**
 * Answers that break the rules during an outage: anything but a 2xx or a 503 in its route's
 * shape with Retry-After. No answer at all (status 0: a reset, or none within `call`'s guard)
 * is one. How fast the 503s come is the bench's to measure, not a test's on a busy machine.
 */
const unacceptable = (answers: Answer[]) => answers.filter((a) => !((a.status >= 200 && a.status < 300) || isUnavailableAnswer(a)));

/** With FAULTS_REPORT naming a file, what each fault run was answered is appended to it (figures for a fault report). */
const report = (run: string, answers: Answer[]) => {
  if (process.env.FAULTS_REPORT) appendFileSync(process.env.FAULTS_REPORT, `${JSON.stringify({ run, answered: tally(answers) })}\n`);
};

/** What a status was answered how often, as `{ "<what> <status>": count }`. */
const tally = (answers: Answer[]) =>
  answers.reduce<Record<string, number>>((counts, a) => ({ ...counts, [`${a.what} ${a.status}`]: (counts[`${a.what} ${a.status}`] ?? 0) + 1 }), {});

const real = REAL.databaseUrl && REAL.redisUrl && REAL.natsUrl;

const ALL_IN_ONE = join(root, 'apps/all-in-one/dist/main.js');

interface Admin {
  email: string;
  password: string;
}

/**
 * The all-in-one as its own process on `port`, silent, on the given servers, with `admin` as
 * its bootstrap admin. `stderr()` is what it printed there: an unhandled error's stack, before
 * the process dies.
 */
function spawnAllInOne(port: number, dataDir: string, servers: { database: string; cache: string; bus: string }, admin: Admin, env: Record<string, string> = {}) {
  if (!existsSync(ALL_IN_ONE)) throw new Error('build first (npm run build): missing apps/all-in-one/dist/main.js');
  const child = spawn(process.execPath, [ALL_IN_ONE], {
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      // /metrics on a free port: several of these may run on this machine at once.
      MANAGEMENT_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'silent',
      DATABASE_URL: servers.database,
      REDIS_URL: servers.cache,
      NATS_URL: servers.bus,
      BOOTSTRAP_ADMIN_EMAIL: admin.email,
      BOOTSTRAP_ADMIN_PASSWORD: admin.password,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Its log lines (JSON, one a line), for the tests that count what an outage logged.
  const lines: { level: number; msg: string; [field: string]: unknown }[] = [];
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const text = partial + chunk.toString();
    const complete = text.split('\n');
    partial = complete.pop() ?? '';
    for (const line of complete) {
      try {
        lines.push(JSON.parse(line) as (typeof lines)[number]);
      } catch {
        // not a log line
      }
    }
  });
  return { child, stderr: () => stderr, logLines: () => lines };
}

/** Whether the process at `base` became ready within 90 s. */
const becomesReady = (base: string) => eventually(async () => (await call(`${base}/health/readiness`, 'ready')).status === 200, READY_BUDGET_MS, 250);

/** The bootstrap admin's access token, once sso signs it in (within 30 s), else undefined. */
async function adminToken(base: string, admin: Admin): Promise<string | undefined> {
  return (await adminTokens(base, admin))?.access_token;
}

/** The bootstrap admin's tokens (access and refresh), once sso signs it in (within 30 s), else undefined. */
async function adminTokens(base: string, admin: Admin): Promise<{ access_token: string; refresh_token: string } | undefined> {
  let tokens: { access_token: string; refresh_token: string } | undefined;
  await eventually(async () => {
    const answer = await call(`${base}/api/v1/sso/token`, 'sign in', form({ grant_type: 'password', username: admin.email, password: admin.password }), 'oauth');
    if (answer.status === 200) tokens = JSON.parse(answer.body!) as { access_token: string; refresh_token: string };
    return answer.status === 200;
  }, SETTLE_BUDGET_MS, 250);
  return tokens;
}

/** SIGTERM, and SIGKILL if it has not exited 10 s later. */
async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, delay(10_000)]);
  child.kill('SIGKILL');
}

describeIf(real, NEEDS_REAL_SERVERS)('all-in-one process with Postgres, Redis and NATS behind fault proxies', () => {
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let proxies: Record<'database' | 'cache' | 'bus', FaultProxy>;
  let child: ChildProcess;
  let base: string;
  let token: string;
  let dataDir: string;
  let stderr: () => string;
  let logLines: () => { level: number; msg: string; [field: string]: unknown }[];
  /** Ids of products whose create was answered 201: every one must be readable at the end. */
  const acknowledged: string[] = [];
  const ADMIN = { email: 'faults-admin@example.com', password: 'a long bootstrap password for faults' };
  /** The admin's refresh token (never used until a database outage refuses it), a service's API key and its credential id. */
  let refreshToken: string;
  let apiKey: string;
  let credentialId: string;

  const headers = () => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });
  const createProduct = async (n: number): Promise<Answer> => {
    const answer = await call(`${base}/api/v1/products`, 'create product', {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({ name: `fault ${n}`, price: 1.5, stock: Math.abs(n), category: 'Fruits', perishable: false }),
    });
    if (answer.status === 201) acknowledged.push((JSON.parse(answer.body!) as { id: string }[])[0]!.id);
    return answer;
  };
  /** A list filtered on a value nobody wrote: never in the cache, always a database read. */
  const uncachedRead = () => call(`${base}/api/v1/products?name=${randomUUID()}`, 'uncached read', { headers: headers() });
  const readBack = (id: string) => call(`${base}/api/v1/products/${id}`, 'read back', { headers: headers() });
  const TOKEN = () => `${base}/api/v1/sso/token`;
  const passwordGrant = () => call(TOKEN(), 'password grant', form({ grant_type: 'password', username: ADMIN.email, password: ADMIN.password }), 'oauth');
  const clientGrant = () => call(TOKEN(), 'client_credentials grant', form({ grant_type: 'client_credentials', client_secret: apiKey }), 'oauth');
  const refreshGrant = () => call(TOKEN(), 'refresh grant', form({ grant_type: 'refresh_token', refresh_token: refreshToken }), 'oauth');
  /** An unknown token: 200 when the database answers (RFC 7009), which it must be asked. */
  const revoke = () => call(`${base}/api/v1/sso/revoke`, 'revoke', form({ token: randomUUID() }), 'oauth');
  const introspect = () =>
    call(`${base}/api/v1/sso/introspect`, 'introspect', form({ token: randomUUID() }, { authorization: `Basic ${Buffer.from(`${credentialId}:${apiKey}`).toString('base64')}` }), 'oauth');
  /** The login form posted for a pending request, which only the database knows. */
  const loginPage = () => call(`${base}/api/v1/sso/login`, 'login page', form({ request: randomUUID(), csrf: 'x', username: ADMIN.email, password: 'x' }), 'page');
  const alive = () => expect([child.exitCode, child.signalCode, stderr()]).toEqual([null, null, '']);

  beforeAll(async () => {
    testDb = await createTestDatabase(REAL.databaseUrl!);
    proxies = {
      database: await startFaultProxy(hostPort(testDb.url)),
      cache: await startFaultProxy(hostPort(REAL.redisUrl!)),
      bus: await startFaultProxy(hostPort(REAL.natsUrl!)),
    };
    dataDir = await mkdtemp(join(tmpdir(), 'faults-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const servers = { database: proxies.database.url(testDb.url), cache: proxies.cache.url(REAL.redisUrl!), bus: proxies.bus.url(REAL.natsUrl!) };
    ({ child, stderr, logLines } = spawnAllInOne(port, dataDir, servers, ADMIN, { LOG_LEVEL: 'info' }));
    expect(await becomesReady(base)).toBe(true);
    const tokens = await adminTokens(base, ADMIN);
    token = tokens?.access_token ?? '';
    refreshToken = tokens?.refresh_token ?? '';
    expect(token).not.toBe('');
    const service = await call(`${base}/api/v1/identity`, 'create identity', {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({ email: `fault-service-${randomUUID()}@example.com`, name: 'Fault Service', roles: ['introspect'] }),
    });
    apiKey = randomBytes(32).toString('base64url');
    const credential = await call(`${base}/api/v1/credentials`, 'create API key', {
      method: 'POST',
      headers: headers(),
      body: JSON.stringify({ identity_id: (JSON.parse(service.body!) as { id: string }[])[0]!.id, provider: 'API_KEY', secret: apiKey }),
    });
    credentialId = (JSON.parse(credential.body!) as { id: string }[])[0]!.id;
    expect((await clientGrant()).status).toBe(200);
  });

  afterAll(async () => {
    await stopProcess(child);
    await Promise.all(Object.values(proxies ?? {}).map((proxy) => proxy.close()));
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** Every kind of route that needs the database, in turn: writes, lists, token grants, revocation, introspection. */
  const databaseTraffic = [(n: number) => createProduct(n), () => uncachedRead(), () => passwordGrant(), () => clientGrant(), () => revoke(), () => introspect()];

  it.each(['cut', 'blackhole'] as const)(
    'Postgres %s under load: 503s with Retry-After in each route\'s shape (never a 500), live, unready naming the database; back once it returns',
    async (fault) => {
      const traffic = load((n) => databaseTraffic[n % databaseTraffic.length]!(n), 10);
      await delay(500);
      const before = traffic.answers.length;
      proxies.database[fault]();
      await delay(1_000);
      const liveness = await call(`${base}/health/liveness`, 'liveness');
      const readiness = await call(`${base}/health/readiness`, 'readiness');
      await delay(5_000);
      const during = traffic.answers.slice(before);
      proxies.database.restore();
      const back = await eventually(async () => (await createProduct(-1)).status === 201, SETTLE_BUDGET_MS, 100);
      await traffic.stop();

      alive();
      expect(liveness.status).toBe(200);
      expect(readiness.status).toBe(503);
      expect(JSON.parse(readiness.body!).dependencies.database.status).toBe('disconnected');
      expect(during.filter((a) => a.status === 503).length).toBeGreaterThan(0);
      report(`Postgres ${fault}`, during);
      expect(tally(unacceptable(during))).toEqual({});
      // Every kind met the outage: a grant's 503 is no accident of the writes.
      expect(new Set(during.filter((a) => a.status === 503).map((a) => a.what))).toEqual(
        new Set(['create product', 'uncached read', 'password grant', 'client_credentials grant', 'revoke', 'introspect']),
      );
      expect(back).toBe(true);
      expect((await call(`${base}/health/readiness`, 'readiness')).status).toBe(200);
    },
  );

  it.each(['starting-up', 'frozen'] as const)(
    'Postgres %s (a server answering 57P03 at connect, or never answering): every route answers 503 with Retry-After in its own shape, or from a cache',
    async (behaviour) => {
      proxies.database.impersonate(fakePostgres(behaviour));
      const answers: Answer[] = [];
      try {
        for (const request of [() => createProduct(1), uncachedRead, passwordGrant, clientGrant, refreshGrant, revoke, introspect, loginPage]) {
          answers.push(await request());
        }
      } finally {
        proxies.database.restore();
      }
      expect(await eventually(async () => (await createProduct(-1)).status === 201, SETTLE_BUDGET_MS, 100)).toBe(true);
      alive();
      report(`Postgres ${behaviour}`, answers);
      // A 2xx from a cache is as good (an API key checked recently); anything else is a 503 in its route's shape.
      expect(unacceptable(answers).map((a) => ({ what: a.what, status: a.status, body: a.body?.slice(0, 200) }))).toEqual([]);
      // What only the database can answer did meet the outage.
      const databaseOnly = ['create product', 'uncached read', 'refresh grant', 'revoke', 'login page'];
      expect(answers.filter((a) => databaseOnly.includes(a.what)).map((a) => `${a.what} ${a.status}`)).toEqual(databaseOnly.map((what) => `${what} 503`));
      // The refresh token was not spent by the refused grant; it is now (single use), so the next test takes its successor.
      const refreshed = await refreshGrant();
      expect(refreshed.status).toBe(200);
      refreshToken = (JSON.parse(refreshed.body!) as { refresh_token: string }).refresh_token;
    },
  );

  it('kept every write it acknowledged', async () => {
    expect(acknowledged.length).toBeGreaterThan(0);
    const missing: Answer[] = [];
    for (const id of acknowledged) {
      const answer = await readBack(id);
      if (answer.status !== 200) missing.push(answer);
    }
    expect(missing).toEqual([]);
  });

  it.each(['cut', 'blackhole'] as const)('Redis %s under load: not one read fails; readiness reports the cache, still ready', async (fault) => {
    const ids = acknowledged.slice(0, 20);
    const traffic = load((n) => readBack(ids[n % ids.length]!), 10);
    await delay(300);
    proxies.cache[fault]();
    await delay(1_000);
    const readiness = await call(`${base}/health/readiness`, 'readiness');
    await delay(3_000);
    proxies.cache.restore();
    await delay(500);
    const answers = await traffic.stop();
    alive();
    expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    expect(readiness.status).toBe(200);
    expect(JSON.parse(readiness.body!)).toMatchObject({ status: 'degraded', dependencies: { cache: { status: 'disconnected' } } });
  });

  it('Redis cut while tokens are granted: every grant succeeds, and the throttle logs the outage once and its end once, with a count', async () => {
    const DOWN = 'login throttle: shared cache unavailable; counting in this process';
    const UP = 'login throttle: shared cache answers again';
    const from = logLines().length;
    const throttleLines = () => logLines().slice(from).filter((line) => line.msg.startsWith('login throttle'));
    proxies.cache.cut();
    const grants: Answer[] = [];
    try {
      for (let n = 0; n < 12; n++) grants.push(await (n % 2 ? passwordGrant() : clientGrant()));
    } finally {
      proxies.cache.restore();
    }
    // The first grant once Redis answers again ends the outage.
    await eventually(async () => (await passwordGrant()).status === 200 && throttleLines().some((line) => line.msg === UP), SETTLE_BUDGET_MS, 500);
    alive();
    report('Redis cut (grants)', grants);
    report('Redis cut (throttle log lines)', throttleLines().map((line) => ({ what: line.msg, status: line.level }) as Answer));
    expect(tally(grants)).toEqual({ 'password grant 200': 6, 'client_credentials grant 200': 6 });
    expect(throttleLines().map((line) => line.msg)).toEqual([DOWN, UP]);
    expect(throttleLines()[1]!.failures).toBeGreaterThanOrEqual(6);
  });

  it.each(['cut', 'blackhole'] as const)('NATS %s: writes still succeed, their events wait in the outbox and are relayed after it returns', async (fault) => {
    proxies.bus[fault]();
    await delay(500);
    const created: Answer[] = [];
    for (let n = 0; n < 5; n++) {
      created.push(
        await call(`${base}/api/v1/identity`, 'create identity', {
          method: 'POST',
          headers: headers(),
          body: JSON.stringify({ email: `fault-${randomUUID()}@example.com`, name: 'Fault Test' }),
        }),
      );
    }
    const database = openPostgres({ url: testDb.url, poolMax: 1, logger: silentLogger() });
    try {
      const pending = async () => Number((await database.query<{ count: string }>('select count(*) from "identity"."_outbox"'))[0]!.count);
      const waiting = await pending();
      proxies.bus.restore();
      alive();
      expect(created.map((a) => a.status)).toEqual([201, 201, 201, 201, 201]);
      expect(waiting).toBeGreaterThan(0);
      expect(await eventually(async () => (await pending()) === 0, SETTLE_BUDGET_MS, 250)).toBe(true);
    } finally {
      await database.close();
    }
  });

  it('is still the same process, live, and drains on SIGTERM', async () => {
    alive();
    expect((await call(`${base}/health/liveness`, 'liveness')).status).toBe(200);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describeIf(real, NEEDS_REAL_SERVERS)('all-in-one process started while NATS is unreachable', () => {
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let bus: FaultProxy;
  let child: ChildProcess;
  let base: string;
  let dataDir: string;
  let stderr: () => string;
  const ADMIN = { email: 'nats-down-admin@example.com', password: 'a long bootstrap password for nats down' };

  beforeAll(async () => {
    testDb = await createTestDatabase(REAL.databaseUrl!);
    bus = await startFaultProxy(hostPort(REAL.natsUrl!));
    bus.cut();
    dataDir = await mkdtemp(join(tmpdir(), 'nats-down-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    ({ child, stderr } = spawnAllInOne(port, dataDir, { database: testDb.url, cache: REAL.redisUrl!, bus: bus.url(REAL.natsUrl!) }, ADMIN));
  });

  afterAll(async () => {
    await stopProcess(child);
    await bus?.close();
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('starts and serves writes; their events wait in the outbox and are relayed once NATS is reachable', async () => {
    expect(await becomesReady(base)).toBe(true);
    const token = (await adminToken(base, ADMIN)) ?? '';
    expect(token).not.toBe('');
    const created = await call(`${base}/api/v1/identity`, 'create identity', {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: `nats-down-${randomUUID()}@example.com`, name: 'Nats Down' }),
    });
    expect(created.status).toBe(201);
    const database = openPostgres({ url: testDb.url, poolMax: 1, logger: silentLogger() });
    try {
      const pending = async () => Number((await database.query<{ count: string }>('select count(*) from "identity"."_outbox"'))[0]!.count);
      expect(await pending()).toBeGreaterThan(0);
      bus.restore();
      expect(await eventually(async () => (await pending()) === 0, SETTLE_BUDGET_MS, 250)).toBe(true);
    } finally {
      await database.close();
    }
    // Never an unhandled error: the process is the same, and stops cleanly.
    expect([child.exitCode, child.signalCode, stderr()]).toEqual([null, null, '']);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe.each(testModes())('split mode: the gateway in front of a service behind a fault proxy (%s)', (mode) => {
  let deps: PlatformDependencies;
  let service: RunningApp;
  let gateway: RunningApp;
  let proxy: FaultProxy;

  beforeAll(async () => {
    deps = await openPlatformDependencies(mode, { PLATFORM_SERVICES: 'crud' });
    service = await listenApp('crud', await buildServiceApp(crudService, deps), { host: '127.0.0.1', port: 0 });
    proxy = await startFaultProxy(hostPort(service.url));
    gateway = await listenApp(
      'gateway',
      await buildGateway({ ...deps.config, CRUD_URL: `http://127.0.0.1:${proxy.port}`, UPSTREAM_TIMEOUT_MS: 2_000 }, deps.logger),
      { host: '127.0.0.1', port: 0 },
    );
  });
  afterAll(async () => {
    await gateway?.close();
    await proxy?.close();
    await service?.close();
    await deps?.dispose();
  });

  const ping = () => call(`${gateway.url}/api/v1/products/ping`, 'ping through the gateway');

  it.each(['cut', 'blackhole'] as const)('service %s under load: the gateway answers 502/503 problems and stays up', async (fault) => {
    const traffic = load(ping, 10);
    await delay(300);
    const before = traffic.answers.length;
    proxy[fault]();
    await delay(3_000);
    const liveness = await call(`${gateway.url}/health/liveness`, 'gateway liveness');
    const during = traffic.answers.slice(before);
    proxy.restore();
    const back = await eventually(async () => (await ping()).status === 200, SETTLE_BUDGET_MS, 100);
    await traffic.stop();

    expect(liveness.status).toBe(200);
    const failed = during.filter((a) => a.status !== 200);
    expect(failed.length).toBeGreaterThan(0);
    // Past the upstream timeout (2 s) a hung service is a 502, a reset or refused one at once: each
    // is answered (how soon a cut is answered is measured by `npm run bench`, not asserted here).
    expect(failed.filter((a) => ![502, 503].includes(a.status) || a.contentType !== PROBLEM)).toEqual([]);
    expect(back).toBe(true);
  });
});

describeIf(REAL.databaseUrl, NEEDS_REAL_POSTGRES)('a one-connection pool (DATABASE_POOL_MAX=1) behind a slow network', () => {
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let proxy: FaultProxy;
  let issuer: TokenIssuer;
  let deps: Dependencies<CrudConfig>;
  let app: App;

  beforeAll(async () => {
    testDb = await createTestDatabase(REAL.databaseUrl!);
    proxy = await startFaultProxy(hostPort(testDb.url));
    issuer = await startTokenIssuer();
    // The statement budget is generous here: the burst below only queues, and must wait its turn.
    const config = testConfig({ DATABASE_URL: proxy.url(testDb.url), DATABASE_POOL_MAX: '1', DATABASE_STATEMENT_TIMEOUT_MS: '60000', JWKS_URL: issuer.jwksUrl }, [crudConfig]);
    deps = await openDependencies(config, silentLogger(), { name: 'crud' });
    app = await buildServiceApp(crudService, deps);
  });
  afterAll(async () => {
    await app?.close();
    if (deps) await closeDependencies(deps);
    await proxy?.close();
    await issuer?.close();
    await testDb?.drop();
  });

  it('answers a burst of 20 concurrent uncached reads all 200: they wait for the connection instead of failing', async () => {
    const token = await issuer.mint(randomUUID());
    // Every answer of the server comes 100 ms late: 20 reads in turn on one connection take seconds.
    proxy.slow(100);
    try {
      const statuses = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const response = await app.inject({ method: 'GET', url: `/api/v1/products?name=${randomUUID()}`, headers: { authorization: `Bearer ${token}` } });
          return response.statusCode;
        }),
      );
      const answers = statuses.map((status) => ({ what: 'uncached read', status }) as Answer);
      report('pool of 1, 20 reads at once, 100 ms latency', answers);
      expect(tally(answers)).toEqual({ 'uncached read 200': 20 });
    } finally {
      proxy.restore();
    }
  });
});
