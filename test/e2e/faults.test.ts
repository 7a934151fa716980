import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { crudService } from '@app/crud-service';
import { buildGateway } from '@app/gateway';
import { buildServiceApp, listenApp, openPostgres, type RunningApp } from '@app/platform';
import { createTestDatabase, eventually, freePort, openTestDependencies, REAL, SETTLE_BUDGET_MS, silentLogger, startFaultProxy, testModes, type FaultProxy } from '@app/testing';

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

interface Answer {
  what: string;
  status: number;
  ms: number;
  contentType?: string | null;
  retryAfter?: string | null;
  body?: string;
  id?: string;
}

/** One request and how it was answered; status 0 when it got no answer at all (a reset, or more than 15 s). */
async function call(url: string, what: string, init: RequestInit = {}): Promise<Answer> {
  const started = Date.now();
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
    const body = await response.text();
    return {
      what,
      status: response.status,
      ms: Date.now() - started,
      contentType: response.headers.get('content-type'),
      retryAfter: response.headers.get('retry-after'),
      body,
    };
  } catch (error) {
    return { what, status: 0, ms: Date.now() - started, body: String(error) };
  }
}

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
 * Answers that break the rules during an outage: anything but a 2xx or a 503 problem with
 * Retry-After. No answer at all (status 0: a reset, or none within `call`'s guard) is one.
 */
const unacceptable = (answers: Answer[]) =>
  answers.filter(
    (a) => !(a.status >= 200 && a.status < 300) && !(a.status === 503 && a.contentType === PROBLEM && a.retryAfter !== null),
  );

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
function spawnAllInOne(port: number, dataDir: string, servers: { database: string; cache: string; bus: string }, admin: Admin) {
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
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { child, stderr: () => stderr };
}

/** Whether the process at `base` became ready within 90 s. */
const becomesReady = (base: string) => eventually(async () => (await call(`${base}/health/readiness`, 'ready')).status === 200, 90_000, 250);

/** The bootstrap admin's access token, once sso signs it in (within 30 s), else undefined. */
async function adminToken(base: string, admin: Admin): Promise<string | undefined> {
  let token: string | undefined;
  await eventually(async () => {
    const answer = await call(`${base}/api/v1/sso/token`, 'sign in', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', username: admin.email, password: admin.password }).toString(),
    });
    if (answer.status === 200) token = (JSON.parse(answer.body!) as { access_token: string }).access_token;
    return answer.status === 200;
  }, SETTLE_BUDGET_MS, 250);
  return token;
}

/** SIGTERM, and SIGKILL if it has not exited 10 s later. */
async function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, delay(10_000)]);
  child.kill('SIGKILL');
}

(real ? describe : describe.skip)('all-in-one process with Postgres, Redis and NATS behind fault proxies', () => {
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let proxies: Record<'database' | 'cache' | 'bus', FaultProxy>;
  let child: ChildProcess;
  let base: string;
  let token: string;
  let dataDir: string;
  let stderr: () => string;
  /** Ids of products whose create was answered 201: every one must be readable at the end. */
  const acknowledged: string[] = [];
  const ADMIN = { email: 'faults-admin@example.com', password: 'a long bootstrap password for faults' };

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
    ({ child, stderr } = spawnAllInOne(port, dataDir, servers, ADMIN));
    expect(await becomesReady(base)).toBe(true);
    token = (await adminToken(base, ADMIN)) ?? '';
    expect(token).not.toBe('');
  });

  afterAll(async () => {
    await stopProcess(child);
    await Promise.all(Object.values(proxies ?? {}).map((proxy) => proxy.close()));
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it.each(['cut', 'blackhole'] as const)(
    'Postgres %s under load: 503 problems with Retry-After, live, unready naming the database; back once it returns',
    async (fault) => {
      const traffic = load((n) => (n % 2 ? createProduct(n) : uncachedRead()), 10);
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
      expect(unacceptable(during)).toEqual([]);
      expect(back).toBe(true);
      expect((await call(`${base}/health/readiness`, 'readiness')).status).toBe(200);
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

(real ? describe : describe.skip)('all-in-one process started while NATS is unreachable', () => {
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
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let service: RunningApp;
  let gateway: RunningApp;
  let proxy: FaultProxy;

  beforeAll(async () => {
    deps = await openTestDependencies(mode, { PLATFORM_SERVICES: 'crud' });
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
