// Ready means ready (issue 25, point 5): a script that waits for readiness and then signs in
// must get a token, in the all-in-one and in split mode; and split mode in development creates
// and prints a development admin as the all-in-one does.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startPlatform, type Platform } from '@app/all-in-one';
import { startSplit, type SplitCluster } from '@app/split';
import { createSsoService } from '@app/sso';
import { createTestDatabase, describeIf, NEEDS_REAL_SERVERS, REAL, silentLogger, testModes } from '@app/testing';
import { openPlatformDependencies, type PlatformDependencies } from '../support/platform.js';
import { CLUSTER_ENV } from '../support/replicas.js';

const passwordGrant = (url: string, username: string, password: string) =>
  fetch(`${url}/api/v1/sso/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username, password }),
  });

/** Asks `url` until it answers 200, as a deploy script or a Kubernetes probe would; every other status is remembered. */
async function firstReady(url: string): Promise<{ before: number[] }> {
  const before: number[] = [];
  for (;;) {
    const status = await fetch(url).then((response) => response.status, () => 0);
    if (status === 200) return { before };
    before.push(status);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe.each(testModes())('the all-in-one is ready only once the bootstrap admin can sign in (%s)', (mode) => {
  const admin = { email: `admin-${randomUUID().slice(0, 8)}@example.com`, password: randomBytes(18).toString('base64url') };
  let deps: PlatformDependencies;
  let platform: Platform | undefined;
  beforeAll(async () => {
    deps = await openPlatformDependencies(mode, { BOOTSTRAP_ADMIN_EMAIL: admin.email, BOOTSTRAP_ADMIN_PASSWORD: admin.password });
  });
  afterAll(async () => {
    await platform?.close();
    await deps?.dispose();
  });

  it('answers 503 on both readiness routes until then, and the first 200 already lets the admin sign in', async () => {
    platform = await startPlatform(deps.config, silentLogger(), { port: 0, dependencies: deps });
    const probe = await firstReady(`${platform.url}/health/readiness`);
    // Signed in at once: no retry, as a script that trusts readiness does.
    expect((await passwordGrant(platform.url, admin.email, admin.password)).status).toBe(200);
    expect(probe.before.every((status) => status === 503)).toBe(true);
    const aggregated = await fetch(`${platform.url}/api/v1/health/readiness`);
    expect(aggregated.status).toBe(200);
    const report = (await fetch(`${platform.url}/health/readiness`).then((response) => response.json())) as { dependencies: Record<string, { status: string }> };
    expect(report.dependencies).toMatchObject({ signingKey: { status: 'connected' }, bootstrapAdmin: { status: 'connected' } });
  });

  it('reports the missing admin as the reason while it does not exist', async () => {
    // An identity with the configured email and no admin role: the bootstrap refuses to promote it.
    const email = `taken-${randomUUID().slice(0, 8)}@example.com`;
    const again = await openPlatformDependencies(mode, { BOOTSTRAP_ADMIN_EMAIL: email, BOOTSTRAP_ADMIN_PASSWORD: admin.password });
    // Its development admin's password is not needed here: not printed.
    const quiet = { sso: createSsoService({ announce: () => undefined }) };
    const first = await startPlatform({ ...again.config, BOOTSTRAP_ADMIN_EMAIL: undefined, BOOTSTRAP_ADMIN_PASSWORD: undefined }, silentLogger(), { port: 0, dependencies: again, services: quiet });
    try {
      expect((await fetch(`${first.url}/api/v1/identity`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Not an admin', email }) })).status).toBe(201);
    } finally {
      await first.close();
    }
    const second = await startPlatform(again.config, silentLogger(), { port: 0, dependencies: again });
    try {
      // Given time to try, it still is not ready: the admin it was told to have does not exist.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const readiness = await fetch(`${second.url}/health/readiness`);
      expect(readiness.status).toBe(503);
      expect(((await readiness.json()) as { dependencies: Record<string, { status: string }> }).dependencies.bootstrapAdmin).toMatchObject({ status: 'disconnected' });
      expect((await fetch(`${second.url}/api/v1/health/readiness`)).status).toBe(503);
    } finally {
      await second.close();
      await again.dispose();
    }
  });
});

describeIf(REAL.databaseUrl && REAL.redisUrl && REAL.natsUrl, NEEDS_REAL_SERVERS)('split mode (real servers)', () => {
  const started: { cluster: SplitCluster; drop(): Promise<void> }[] = [];
  const start = async (env: Record<string, string>, output: (line: string) => void = () => undefined) => {
    const db = await createTestDatabase(REAL.databaseUrl!);
    const cluster = await startSplit({
      replicas: 2,
      port: 0,
      output: (_name, line) => output(line),
      env: { PATH: process.env.PATH, DATABASE_URL: db.url, REDIS_URL: REAL.redisUrl, NATS_URL: REAL.natsUrl, LOG_LEVEL: 'warn', ...CLUSTER_ENV, CACHE_KEY_PREFIX: `ready:${randomUUID().slice(0, 8)}:`, ...env },
    }).catch(async (error: unknown) => {
      await db.drop();
      throw error;
    });
    started.push({ cluster, drop: db.drop });
    return cluster;
  };
  afterAll(async () => {
    for (const { cluster, drop } of started) {
      await cluster.stop();
      await drop();
    }
  });

  it('is started only once the configured admin can sign in through the gateway', async () => {
    const admin = { email: `admin-${randomUUID().slice(0, 8)}@example.com`, password: randomBytes(18).toString('base64url') };
    const cluster = await start({ BOOTSTRAP_ADMIN_EMAIL: admin.email, BOOTSTRAP_ADMIN_PASSWORD: admin.password });
    expect((await passwordGrant(cluster.url, admin.email, admin.password)).status).toBe(200);
    expect((await fetch(`${cluster.url}/api/v1/health/readiness`)).status).toBe(200);
  });

  it('creates admin@localhost in development and prints its generated password once, which signs in as an admin', async () => {
    const lines: string[] = [];
    const cluster = await start({ NODE_ENV: 'development' }, (line) => lines.push(line));
    const passwords = lines.flatMap((line) => /^ {4}password: +(\S+)$/.exec(line)?.[1] ?? []);
    expect(passwords).toHaveLength(1);
    const response = await passwordGrant(cluster.url, 'admin@localhost', passwords[0]!);
    expect(response.status).toBe(200);
    const { access_token: token } = (await response.json()) as { access_token: string };
    expect(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())).toMatchObject({ roles: ['admin'] });
  });
});
