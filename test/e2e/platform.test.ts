import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startPlatform, type Platform } from '@app/all-in-one';
import { DOMAIN_SERVICES, identityApi, INTERNAL_APIS, SERVICE_NAMES, SERVICES } from '@app/contracts';
import { openPostgres } from '@app/platform';
import { createSsoService } from '@app/sso';
import {
  createTestDatabase,
  eventually,
  freePort,
  listeningPorts,
  listeningServerCount,
  occupyPorts,
  readJson,
  READY_BUDGET_MS,
  REAL,
  SETTLE_BUDGET_MS,
  silentLogger,
  startTokenIssuer,
  testModes,
} from '@app/testing';
import { openPlatformDependencies, type PlatformDependencies } from '../support/platform.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe.each(testModes())('all-in-one platform (%s)', (mode) => {
  let deps: PlatformDependencies;
  let platform: Platform;
  let serversBefore: number;
  /** What sso shows the operator once: the development admin's generated password. */
  const announced: string[] = [];
  beforeAll(async () => {
    deps = await openPlatformDependencies(mode);
    serversBefore = listeningServerCount();
    platform = await startPlatform(deps.config, silentLogger(), {
      port: 0,
      dependencies: deps,
      services: { sso: createSsoService({ announce: (message) => void announced.push(message) }) },
    });
  });
  afterAll(async () => {
    await platform?.close();
    await deps?.dispose();
  });

  /** Signs in the development admin the all-in-one creates: sso, credentials and identity, in process. */
  const signInAdmin = async () => {
    expect(await eventually(async () => announced.length === 1)).toBe(true);
    const password = /^ {4}password: +(\S+)$/m.exec(announced[0]!)?.[1] ?? '';
    const response = await fetch(`${platform.url}/api/v1/sso/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', username: 'admin@localhost', password }),
    });
    expect(response.status).toBe(200);
    return ((await readJson(response)) as { access_token: string }).access_token;
  };

  it('listens on exactly one public port, the one its URL names, on the interface HOST names, and its management port', () => {
    expect(listeningServerCount() - serversBefore).toBe(2);
    const address = platform.app.server.address() as AddressInfo;
    expect(platform.url).toBe(`http://127.0.0.1:${address.port}`);
    expect(address.address).toBe(deps.config.HOST);
    expect(platform.managementUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(platform.managementUrl).not.toBe(platform.url);
  });

  it('is ready on that port once its bootstrap admin exists: its own probe and the health report of every service', async () => {
    expect(await eventually(async () => (await fetch(`${platform.url}/health/readiness`)).status === 200, READY_BUDGET_MS)).toBe(true);
    const probe = await fetch(`${platform.url}/health/readiness`);
    expect(probe.status).toBe(200);
    expect(await readJson(probe)).toMatchObject({ status: 'active', service: 'platform' });
    const response = await fetch(`${platform.url}/api/v1/health/readiness`);
    expect(response.status).toBe(200);
    const body = await readJson(response);
    expect(body.status).toBe('active');
    expect(Object.keys(body.services).sort()).toEqual([...deps.config.PLATFORM_SERVICES].sort());
  });

  it('serves one API document with every service in it, and their tags declared', async () => {
    const document = await readJson(await fetch(`${platform.url}/docs/json`));
    expect(document['x-unavailable-services']).toBeUndefined();
    expect(document.tags.map((tag: { name: string }) => tag.name)).toContain('Health');
    const operations = Object.values(document.paths as Record<string, Record<string, { tags?: string[] }>>).flatMap((path) => Object.values(path));
    const tags = new Set(operations.flatMap((operation) => operation.tags ?? []));
    expect([...tags]).toEqual(expect.arrayContaining(['Health', 'Identity', 'Credentials', 'SSO']));
  });

  it('routes every generic domain, including ones no table names', async () => {
    expect((await fetch(`${platform.url}/api/v1/products/ping`)).status).toBe(200);
    expect((await fetch(`${platform.url}/api/v1/posts/ping`)).status).toBe(200);
    // A domain nobody declares has no route: the edge wants a token, then it is a 404.
    expect((await fetch(`${platform.url}/api/v1/coupons/ping`)).status).toBe(401);
    const unknown = await fetch(`${platform.url}/api/v1/coupons/ping`, { headers: { authorization: `Bearer ${await signInAdmin()}` } });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
  });

  it('signs in its development admin, whose token reads identities: the services call each other in process', async () => {
    const token = await signInAdmin();
    const admin = await fetch(`${platform.url}/api/v1/identity/email/admin%40localhost`, { headers: { authorization: `Bearer ${token}` } });
    expect(admin.status).toBe(200);
    expect((await readJson(admin))[0]).toMatchObject({ email: 'admin@localhost', roles: ['admin'] });
  });

  it('answers /internal like the gateway in split mode: 401 without a token, 404 with one', async () => {
    const token = await signInAdmin();
    for (const path of INTERNAL_APIS.flatMap((api) => Object.values(api.methods).map((method) => method.path))) {
      const anonymous = await fetch(`${platform.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect([path, anonymous.status, anonymous.headers.get('www-authenticate')]).toEqual([path, 401, 'Bearer realm="api-platform"']);
      const signed = await fetch(`${platform.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: '{}' });
      expect([path, signed.status]).toEqual([path, 404]);
    }
  });
});

/** Waits for a line of a child's JSON log that satisfies `match`; fails at once, with its stderr, if it exits first. */
// Generous: a first start creates the embedded database, which takes a while on a busy machine.
function waitForLog(child: ChildProcess, match: (line: Record<string, unknown>) => boolean, timeoutMs = READY_BUDGET_MS) {
  return new Promise<Record<string, unknown>>((resolve, reject) => {
    let buffer = '';
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`no matching log line in ${timeoutMs} ms:\n${buffer}${stderr}`)), timeoutMs);
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code} before a matching log line:\n${buffer}${stderr}`));
    });
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
  const entries = [
    'services/health/dist/main.js',
    'services/identity/dist/main.js',
    'services/gateway/dist/main.js',
    'services/identity/dist/migrate.js',
    'apps/all-in-one/dist/main.js',
  ];
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
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('starts identity alone, reading only its own variables, and serves its internal routes there', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'standalone-'));
    const db = REAL.databaseUrl ? await createTestDatabase(REAL.databaseUrl) : undefined;
    const issuer = await startTokenIssuer();
    const child = spawn(process.execPath, [built('services/identity/dist/main.js')], {
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
        JWKS_URL: issuer.jwksUrl,
        // credentials' variable, below OWASP's minimum: identity does not read it, so it starts.
        ARGON2_MEMORY_KIB: '1',
        ...(db ? { DATABASE_URL: db.url } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const listening = await waitForLog(child, (line) => String(line.msg).startsWith('identity listening on'));
      const url = String(listening.msg).replace('identity listening on ', '');
      const probe = await fetch(`${url}/health/readiness`);
      expect(probe.status).toBe(200);
      expect(await readJson(probe)).toMatchObject({ status: 'active', service: 'identity' });
      const lookup = async (token?: string) => {
        const headers: Record<string, string> = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
        const response = await fetch(`${url}${identityApi.methods.lookup.path}`, { method: 'POST', headers, body: JSON.stringify({ email: 'nobody@example.com' }) });
        return [response.status, (await readJson(response)).code];
      };
      expect(await lookup()).toEqual([401, 'PLATFORM_AUTH_INVALID_TOKEN']);
      expect(await lookup(await issuer.mint(randomUUID(), ['admin']))).toEqual([403, 'PLATFORM_AUTH_FORBIDDEN']);
      // An identity an admin made `system` is still an identity: only the platform's own service tokens.
      expect(await lookup(await issuer.mint(randomUUID(), ['system']))).toEqual([403, 'PLATFORM_AUTH_FORBIDDEN']);
      expect(await lookup(await issuer.mint('service:sso', ['system']))).toEqual([404, 'IDENTITY_NOT_FOUND']);
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await issuer.close();
      await db?.drop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('runs the all-in-one from its built entry on PORT and MANAGEMENT_PORT, its only listening ports, while the registry ports are taken', async () => {
    // 3000-3005: where the services listen when each runs alone; the all-in-one needs none of them.
    const registryPorts = SERVICE_NAMES.map((name) => SERVICES[name].port);
    const held = await occupyPorts(registryPorts);
    const port = await freePort();
    const managementPort = await freePort();
    const dataDir = await mkdtemp(join(tmpdir(), 'all-in-one-'));
    const child = spawn(process.execPath, [built('apps/all-in-one/dist/main.js')], {
      env: { PATH: process.env.PATH, PORT: String(port), MANAGEMENT_PORT: String(managementPort), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const ready = await waitForLog(child, (line) => String(line.msg).startsWith('platform ready on'));
      expect(ready.url).toBe(`http://127.0.0.1:${port}`);
      expect(listeningPorts(child.pid!).sort()).toEqual([port, managementPort].sort());
      // Each wait is bounded, so a hang fails naming what it waited for (once, in CI, this test
      // ran out of its whole budget with nothing to say; it has not been reproduced).
      const get = (url: string) => fetch(url, { signal: AbortSignal.timeout(SETTLE_BUDGET_MS) });
      // Said ready only once it is: its readiness already 200.
      expect((await get(`http://127.0.0.1:${port}/health/readiness`)).status).toBe(200);
      expect((await get(`http://127.0.0.1:${managementPort}/metrics`)).status).toBe(200);
      const response = await get(`http://127.0.0.1:${port}/api/v1/health/readiness`);
      expect(response.status).toBe(200);
      expect(Object.keys((await readJson(response)).services).sort()).toEqual([...DOMAIN_SERVICES].sort());
      const exited = new Promise<number | null>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the all-in-one did not exit within ${SETTLE_BUDGET_MS} ms of SIGTERM`)), SETTLE_BUDGET_MS);
        child.once('exit', (code) => {
          clearTimeout(timer);
          resolve(code);
        });
      });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await held.release();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

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
    });
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
