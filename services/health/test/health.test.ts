import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { buildApp } from '@app/health';
import { createApp, createLogger, createRedisCache, healthRoutes, openPostgres, type App } from '@app/platform';
import {
  createTestDatabase,
  eventually,
  freePort,
  openTestDependencies,
  REAL,
  silentLogger,
  startOwnRedis,
  startTcpProxy,
  testModes,
} from '@app/testing';

/** A stand-in service with the platform's own probes, reporting as any service would. */
async function probeOnlyService(name: string): Promise<{ app: App; url: string }> {
  const app = await createApp({ name, version: '1.22.0', logger: silentLogger(), bodyLimit: 1024 });
  await healthRoutes(app, { service: name, version: '1.22.0', checks: {} });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url };
}

describe.each(testModes())('health reports (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let app: App;
  let other: { app: App; url: string };
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    other = await probeOnlyService('crud');
    app = await buildApp(deps, { services: { crud: other.url } });
  });
  afterAll(async () => {
    await app.close();
    await other.app.close();
    await deps.dispose();
  });

  it('answers liveness with status, version and date', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/v1/health/liveness' });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ status: 'active', version: '1.22.0', date: expect.any(String) });
    expect(new Date(response.json().date).getTime()).toBeGreaterThan(Date.now() - 60_000);
  });

  it('answers readiness with uptime, memory, disk, dependencies and services', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/v1/health/readiness' });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toEqual({
      status: 'active',
      version: '1.22.0',
      date: expect.any(String),
      uptime: expect.any(Number),
      memory: { rss: expect.any(Number), heapTotal: expect.any(Number), heapUsed: expect.any(Number), external: expect.any(Number) },
      disk: { free: expect.any(Number), total: expect.any(Number) },
      dependencies: {
        database: { status: 'connected', latency: expect.any(Number), version: expect.stringMatching(/^PostgreSQL \d+/) },
        cache: { status: 'connected', latency: expect.any(Number), version: mode === 'real' ? expect.stringMatching(/^\d+\.\d+/) : 'memory' },
      },
      services: { crud: { status: 'active', latency: expect.any(Number) } },
    });
    expect(body.disk.total).toBeGreaterThan(body.disk.free);
    expect(body.dependencies.database.latency).toBeGreaterThanOrEqual(0);
  });

  it('serves its own probes for Kubernetes', async () => {
    const live = await app.inject({ method: 'GET', url: '/health/liveness' });
    const ready = await app.inject({ method: 'GET', url: '/health/readiness' });
    expect(live.json()).toMatchObject({ status: 'active', service: 'health' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json().dependencies).toEqual({
      database: expect.objectContaining({ status: 'connected' }),
      cache: expect.objectContaining({ status: 'connected' }),
    });
  });
});

describe('readiness when a service is down', () => {
  it('is 503 degraded with that service disconnected at latency -1', async () => {
    const deps = await openTestDependencies('embedded');
    const up = await probeOnlyService('identity');
    const app = await buildApp(deps, { services: { identity: up.url, crud: `http://127.0.0.1:${await freePort()}` } });
    try {
      const response = await app.inject({ method: 'GET', url: '/api/v1/health/readiness' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({
        status: 'degraded',
        services: { identity: { status: 'active' }, crud: { status: 'disconnected', latency: -1 } },
      });
    } finally {
      await app.close();
      await up.app.close();
      await deps.dispose();
    }
  });
});

describe('readiness when the cache dies and comes back', () => {
  let redis: Awaited<ReturnType<typeof startOwnRedis>>;
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let app: App;
  beforeAll(async () => {
    redis = await startOwnRedis();
    deps = await openTestDependencies('embedded');
    const cache = await createRedisCache({ url: redis.url, logger: silentLogger() });
    app = await buildApp({ ...deps, cache }, { services: {} });
    app.addHook('onClose', async () => cache.close());
  });
  afterAll(async () => {
    await app.close();
    await deps.dispose();
    await redis.stop();
  });
  const readiness = () => app.inject({ method: 'GET', url: '/api/v1/health/readiness' });

  it('reports the cache connected with its server version', async () => {
    const response = await readiness();
    expect(response.statusCode).toBe(200);
    expect(response.json().dependencies.cache).toEqual({ status: 'connected', latency: expect.any(Number), version: expect.stringMatching(/^\d+\.\d+/) });
  });

  it('turns 503 degraded, cache disconnected at -1, when Redis is killed', async () => {
    await redis.stop();
    const response = await readiness();
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({ status: 'degraded', dependencies: { cache: { status: 'disconnected', latency: -1 }, database: { status: 'connected' } } });
    // The service's own Kubernetes readiness stays 200: the cache fails open.
    const own = await app.inject({ method: 'GET', url: '/health/readiness' });
    expect(own.statusCode).toBe(200);
    expect(own.json()).toMatchObject({ status: 'degraded', dependencies: { cache: { status: 'disconnected', latency: -1 } } });
  });

  it('is 200 again once Redis is back', async () => {
    await redis.start();
    expect(await eventually(async () => (await readiness()).statusCode === 200)).toBe(true);
    expect((await readiness()).json().dependencies.cache.status).toBe('connected');
  });
});

if (REAL.databaseUrl) {
  const baseUrl = REAL.databaseUrl;
  describe('readiness when the database goes away and comes back', () => {
    let db: Awaited<ReturnType<typeof createTestDatabase>>;
    let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
    let deps: Awaited<ReturnType<typeof openTestDependencies>>;
    let app: App;
    beforeAll(async () => {
      db = await createTestDatabase(baseUrl);
      const target = new URL(db.url);
      proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
      const viaProxy = new URL(db.url);
      viaProxy.host = `127.0.0.1:${proxy.port}`;
      deps = await openTestDependencies('embedded');
      const database = openPostgres({ url: viaProxy.toString(), poolMax: 2, logger: createLogger({ LOG_LEVEL: 'silent' }), connectTimeoutMs: 500 });
      app = await buildApp({ ...deps, database }, { services: {} });
      app.addHook('onClose', async () => database.close());
    });
    afterEach(async () => {
      await proxy.start().catch(() => undefined);
    });
    afterAll(async () => {
      await app.close();
      await proxy.stop();
      await deps.dispose();
      await db.drop();
    });
    const readiness = () => app.inject({ method: 'GET', url: '/api/v1/health/readiness' });

    it('turns 503 degraded with the database disconnected at -1, then recovers', async () => {
      expect((await readiness()).statusCode).toBe(200);
      await proxy.stop();
      const down = await readiness();
      expect(down.statusCode).toBe(503);
      expect(down.json()).toMatchObject({ status: 'degraded', dependencies: { database: { status: 'disconnected', latency: -1 } } });
      const own = await app.inject({ method: 'GET', url: '/health/readiness' });
      expect(own.statusCode).toBe(503);
      await proxy.start();
      expect(await eventually(async () => (await readiness()).statusCode === 200)).toBe(true);
    });
  });
}
