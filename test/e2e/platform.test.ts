import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startPlatform, type Platform } from '@app/all-in-one';
import { openPostgres } from '@app/platform';
import { createTestDatabase, openTestDependencies, readJson, REAL, silentLogger, testModes } from '@app/testing';

const root = fileURLToPath(new URL('../..', import.meta.url));
const ALL_ZERO = { gateway: 0, health: 0, identity: 0, credentials: 0, sso: 0, crud: 0 };

describe.each(testModes())('all-in-one platform (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let platform: Platform;
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    platform = await startPlatform(deps.config, silentLogger(), { ports: ALL_ZERO, dependencies: deps });
  });
  afterAll(async () => {
    await platform.close();
    await deps.dispose();
  });

  it('is ready through the gateway', async () => {
    const response = await fetch(`${platform.url}/api/v1/health/readiness`);
    expect(response.status).toBe(200);
    const body = await readJson(response);
    expect(body.status).toBe('active');
    expect(Object.keys(body.services).sort()).toEqual([...deps.config.PLATFORM_SERVICES].sort());
  });

  it('serves the merged docs with every service answering', async () => {
    const document = await readJson(await fetch(`${platform.url}/docs/json`));
    expect(document['x-unavailable-services']).toBeUndefined();
    expect(document.tags.map((tag: { name: string }) => tag.name)).toContain('Health');
  });

  it('routes every generic domain through the gateway, including ones it has no row for', async () => {
    expect((await fetch(`${platform.url}/api/v1/products/ping`)).status).toBe(200);
    expect((await fetch(`${platform.url}/api/v1/posts/ping`)).status).toBe(200);
    const unknown = await fetch(`${platform.url}/api/v1/coupons/ping`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
  });

  it('serves every service on loopback and the gateway where HOST says', () => {
    for (const service of Object.values(platform.services)) expect(service?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });
});

/** Waits for a line of a child's JSON log that satisfies `match`. */
// Generous: a first start creates the embedded database, which takes a while on a busy machine.
function waitForLog(child: ChildProcess, match: (line: Record<string, unknown>) => boolean, timeoutMs = 90_000) {
  return new Promise<Record<string, unknown>>((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`no matching log line in ${timeoutMs} ms:\n${buffer}`)), timeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      for (const text of buffer.split('\n')) {
        try {
          const line = JSON.parse(text) as Record<string, unknown>;
          if (match(line)) {
            clearTimeout(timer);
            resolve(line);
          }
        } catch {
          // a partial line; the rest arrives with the next chunk
        }
      }
    });
  });
}

const built = (entry: string) => join(root, entry);

describe('standalone entries', () => {
  const entries = ['services/health/dist/main.js', 'services/gateway/dist/main.js', 'services/identity/dist/migrate.js', 'apps/all-in-one/dist/main.js'];
  beforeAll(() => {
    // The built entries are what containers run; `npm run build` makes them.
    const missing = entries.filter((entry) => !existsSync(built(entry)));
    if (missing.length > 0) throw new Error(`build first (npm run build): missing ${missing.join(', ')}`);
  });

  it('starts the health service alone from its built entry and drains on SIGTERM', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'standalone-'));
    const db = REAL.databaseUrl ? await createTestDatabase(REAL.databaseUrl) : undefined;
    const child = spawn(process.execPath, [built('services/health/dist/main.js')], {
      env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', PLATFORM_SERVICES: 'health', DATA_DIR: dataDir, LOG_LEVEL: 'info', ...(db ? { DATABASE_URL: db.url } : {}) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const listening = await waitForLog(child, (line) => String(line.msg).startsWith('health listening on'));
      const url = String(listening.msg).replace('health listening on ', '');
      const response = await fetch(`${url}/api/v1/health/readiness`);
      expect(response.status).toBe(200);
      expect((await readJson(response)).dependencies.database.status).toBe('connected');
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await db?.drop();
    }
  }, 120_000);

  if (REAL.databaseUrl) {
    const baseUrl = REAL.databaseUrl;
    it('applies a service migrations from its built migrate entry, once, as a Job would', async () => {
      const db = await createTestDatabase(baseUrl);
      const run = () =>
        new Promise<number | null>((resolve) => {
          const child = spawn(process.execPath, [built('services/identity/dist/migrate.js')], {
            env: { PATH: process.env.PATH, DATABASE_URL: db.url, LOG_LEVEL: 'silent' },
            stdio: 'ignore',
          });
          child.once('exit', resolve);
        });
      try {
        expect(await run()).toBe(0);
        expect(await run()).toBe(0);
        const database = openPostgres({ url: db.url, poolMax: 1, logger: silentLogger() });
        const applied = await database.query<{ count: string }>('select count(*) from "identity"."_migrations"');
        await database.close();
        expect(Number(applied[0]?.count)).toBeGreaterThan(0);
      } finally {
        await db.drop();
      }
    }, 60_000);
  }

  it('refuses to start on a bad environment, naming the variable', async () => {
    const child = spawn(process.execPath, [built('services/gateway/dist/main.js')], {
      env: { PATH: process.env.PATH, PORT: 'http', REDIS_URL: 'localhost:6379' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(78);
    expect(stderr).toContain('PORT: expected a port number from 0 to 65535, got "http"');
    expect(stderr).toContain('REDIS_URL: expected a URL starting with redis:// or rediss://');
  });
});
