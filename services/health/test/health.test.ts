import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { healthService } from '@app/health';
import {
  buildServiceApp,
  createApp,
  createLogger,
  createRedisCache,
  healthRoutes,
  openPostgres,
  urlVariableOf,
  type App,
  type DependencyCheck,
  type Dependencies,
  type ServiceName,
} from '@app/platform';
import {
  answerRevocationsAsSso,
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
import { probeService } from '../src/health/service.js';

/** A stand-in service with the platform's own probes, reporting as any service would. */
async function probeOnlyService(name: string, checks: Record<string, DependencyCheck> = {}): Promise<{ app: App; url: string }> {
  const app = await createApp({ name, version: '1.22.0', logger: silentLogger(), bodyLimit: 1024 });
  await healthRoutes(app, { service: name, version: '1.22.0', checks });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, url };
}

/**
 * The health service run alone (split mode), reporting on exactly `services`, each reached
 * over HTTP at the given URL (PLATFORM_SERVICES and IDENTITY_URL, CRUD_URL, ...).
 */
async function buildHealth(deps: Dependencies, services: Partial<Record<ServiceName, string>>): Promise<App> {
  const names = Object.keys(services) as ServiceName[];
  // No sso here: the test answers for its revocations (none).
  await answerRevocationsAsSso(deps.bus);
  const urls = Object.fromEntries(names.map((name) => [urlVariableOf(name), services[name]]));
  return buildServiceApp(healthService, { ...deps, config: { ...deps.config, ...urls, PLATFORM_SERVICES: names } });
}

describe.each(testModes())('health reports (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let app: App;
  let other: { app: App; url: string };
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    other = await probeOnlyService('crud');
    app = await buildHealth(deps, { crud: other.url });
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
      revocations: expect.objectContaining({ status: 'connected' }),
    });
  });
});

describe('readiness when a service is down', () => {
  it('is 503 degraded with that service disconnected at latency -1', async () => {
    const deps = await openTestDependencies('embedded');
    const up = await probeOnlyService('identity');
    const app = await buildHealth(deps, { identity: up.url, crud: `http://127.0.0.1:${await freePort()}` });
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

  it('is 503 degraded with that service degraded when it answers its own readiness with 503', async () => {
    const deps = await openTestDependencies('embedded');
    const failing: DependencyCheck = { required: true, probe: () => Promise.reject(new Error('down')) };
    const unready = await probeOnlyService('sso', { database: failing });
    const app = await buildHealth(deps, { sso: unready.url });
    try {
      expect((await unready.app.inject({ method: 'GET', url: '/health/readiness' })).statusCode).toBe(503);
      const response = await app.inject({ method: 'GET', url: '/api/v1/health/readiness' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({ status: 'degraded', services: { sso: { status: 'degraded', latency: expect.any(Number) } } });
      expect(response.json().services.sso.latency).toBeGreaterThanOrEqual(0);
    } finally {
      await app.close();
      await unready.app.close();
      await deps.dispose();
    }
  });
});

describe('probeService', () => {
  const reporting = (status: 'active' | 'degraded') => async () => ({ status, service: 'crud', version: '1.22.0', date: '', dependencies: {} });

  it('reports a service as it reports itself, with the latency of the call', async () => {
    expect(await probeService(reporting('active'))).toEqual({ status: 'active', latency: expect.any(Number) });
    expect(await probeService(reporting('degraded'))).toEqual({ status: 'degraded', latency: expect.any(Number) });
  });

  it('reports a call that fails, or does not answer in time, as disconnected at latency -1', async () => {
    expect(await probeService(() => Promise.reject(new Error('unreachable')))).toEqual({ status: 'disconnected', latency: -1 });
    expect(await probeService(() => new Promise(() => undefined), 50)).toEqual({ status: 'disconnected', latency: -1 });
  });
});

describe('which services it reports on', () => {
  it('reports every domain service of PLATFORM_SERVICES, never itself or the gateway', async () => {
    const deps = await openTestDependencies('embedded');
    const identity = await probeOnlyService('identity');
    const config = { ...deps.config, PLATFORM_SERVICES: ['gateway', 'health', 'identity'] as ServiceName[], IDENTITY_URL: identity.url };
    const app = await buildServiceApp(healthService, { ...deps, config });
    try {
      const response = await app.inject({ method: 'GET', url: '/api/v1/health/readiness' });
      expect(response.statusCode).toBe(200);
      expect(response.json().services).toEqual({ identity: { status: 'active', latency: expect.any(Number) } });
    } finally {
      await app.close();
      await identity.app.close();
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
    app = await buildHealth({ ...deps, cache }, {});
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
      app = await buildHealth({ ...deps, database }, {});
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
