/* global fetch, setTimeout */
// `npm run bench`: the crud service behind the gateway, each in its own process as in
// production, on real Postgres and Redis, measured with autocannon beside a bare Fastify
// route. Prints rps, p50 and p99 per scenario and each one's ratio to the baseline.
//
// Env: DATABASE_URL (a server where a fresh database is created and dropped; default
// postgres://postgres@127.0.0.1:5432/postgres), REDIS_URL, NATS_URL (defaults on 127.0.0.1),
// BENCH_DURATION seconds per scenario (default 5), BENCH_CONNECTIONS (default 10).
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import pg from 'pg';

const root = fileURLToPath(new URL('..', import.meta.url));
const BASE_DATABASE_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const NATS_URL = process.env.NATS_URL || 'nats://127.0.0.1:4222';
const DURATION = Number(process.env.BENCH_DURATION || 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 10);
const ISSUER = 'http://localhost:3000';
const AUDIENCE = 'api-platform';

const ENTRIES = { crud: 'services/crud/dist/main.js', gateway: 'services/gateway/dist/main.js' };
if (Object.values(ENTRIES).some((entry) => !existsSync(`${root}/${entry}`))) {
  console.log('building the services first (npx turbo run build)...');
  spawnSync('npx', ['turbo', 'run', 'build', '--output-logs=errors-only'], { cwd: root, stdio: 'inherit' });
}

const freePort = () =>
  new Promise((resolve) => {
    const server = createNetServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/** A fresh database for this run, dropped at the end. */
async function createDatabase() {
  const name = `bench_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: BASE_DATABASE_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(BASE_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: BASE_DATABASE_URL });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/** The bench's own signing key, its public half served as a JWKS, standing in for sso. */
async function startJwks() {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const kid = randomUUID();
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const token = await new SignJWT({ roles: [] })
    .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(randomUUID())
    .setIssuedAt()
    .setJti(randomUUID())
    .setExpirationTime('1h')
    .sign(privateKey);
  return { url: `http://127.0.0.1:${server.address().port}/jwks`, token, close: () => new Promise((resolve) => server.close(resolve)) };
}

const children = new Set();
/** Spawns a node process and resolves once `ready` answers. */
async function startProcess(name, entry, env, ready) {
  const child = spawn(process.execPath, [`${root}/${entry}`], {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', LOG_LEVEL: 'warn', NODE_ENV: 'production', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  children.add(child);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${stderr}`);
    if (await ready().catch(() => false)) break;
    if (Date.now() > deadline) throw new Error(`${name} did not become ready:\n${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    stop: async () => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      children.delete(child);
    },
  };
}
const answers = (url) => async () => (await fetch(url)).ok;

async function measure(label, options) {
  // A short warm-up lets the JIT and the pools settle; only the second run counts.
  await autocannon({ ...options, connections: CONNECTIONS, duration: 1 });
  const result = await autocannon({ ...options, connections: CONNECTIONS, duration: DURATION });
  const failed = result.non2xx + result.errors + result.timeouts;
  process.stdout.write(`  ${label}: ${Math.round(result.requests.average)} rps${failed ? ` (${failed} failed!)` : ''}\n`);
  return { label, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, failed };
}

const database = await createDatabase();
const jwks = await startJwks();
const stops = [];
try {
  const [barePort, crudPort, gatewayPort] = await Promise.all([freePort(), freePort(), freePort()]);
  const crudEnv = { PORT: String(crudPort), DATABASE_URL: database.url, REDIS_URL, NATS_URL, JWKS_URL: jwks.url, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE };
  // The gateway verifies tokens at the edge too: against the same JWKS as crud.
  const gatewayEnv = {
    PORT: String(gatewayPort),
    PLATFORM_SERVICES: 'crud',
    CRUD_URL: `http://127.0.0.1:${crudPort}`,
    JWKS_URL: jwks.url,
    JWT_ISSUER: ISSUER,
    JWT_AUDIENCE: AUDIENCE,
  };
  const gateway = `http://127.0.0.1:${gatewayPort}`;
  const auth = { authorization: `Bearer ${jwks.token}`, 'content-type': 'application/json' };
  const product = JSON.stringify({ name: 'Banana', price: 1.99, description: 'Yellow and sweet', stock: 120, category: 'Fruits', perishable: true });

  const bare = await startProcess('bare fastify', 'bench/bare.mjs', { PORT: String(barePort) }, answers(`http://127.0.0.1:${barePort}/record`));
  stops.push(bare.stop);
  let crud = await startProcess('crud', ENTRIES.crud, { ...crudEnv, CACHE_TTL_SECONDS: '600' }, answers(`http://127.0.0.1:${crudPort}/health/readiness`));
  const gatewayProcess = await startProcess('gateway', ENTRIES.gateway, gatewayEnv, answers(`${gateway}/health/liveness`));
  stops.push(gatewayProcess.stop);

  // Seed: one record to read, and enough for full list pages.
  const seeded = [];
  for (let i = 0; i < 100; i++) {
    const response = await fetch(`${gateway}/api/v1/products`, { method: 'POST', headers: auth, body: product });
    if (response.status !== 201) throw new Error(`seeding failed: ${response.status} ${await response.text()}`);
    seeded.push((await response.json())[0].id);
  }
  const readUrl = `${gateway}/api/v1/products/${seeded[0]}`;
  const listUrl = `${gateway}/api/v1/products?limit=20`;
  // The same read without the gateway hop, to separate what the cache saves from what the hop costs.
  const directReadUrl = readUrl.replace(gateway, `http://127.0.0.1:${crudPort}`);

  console.log(`bench: ${DURATION} s per scenario, ${CONNECTIONS} connections, loopback; gateway and crud in separate processes`);
  const results = [];
  results.push(await measure('bare Fastify route (baseline)', { url: `http://127.0.0.1:${barePort}/record` }));
  results.push(await measure('ping through the gateway (no auth, cache or db)', { url: `${gateway}/api/v1/products/ping` }));
  results.push(await measure('read by id, cached', { url: readUrl, headers: auth }));
  results.push(await measure('read by id, cached, crud direct', { url: directReadUrl, headers: auth }));
  results.push(await measure('list (limit 20), cached', { url: listUrl, headers: auth }));
  results.push(await measure('create', { url: `${gateway}/api/v1/products`, method: 'POST', headers: auth, body: product }));

  // The same service with its cache turned off: every read goes to Postgres.
  await crud.stop();
  crud = await startProcess('crud (cache off)', ENTRIES.crud, { ...crudEnv, CACHE_TTL_SECONDS: '0' }, answers(`http://127.0.0.1:${crudPort}/health/readiness`));
  results.push(await measure('read by id, uncached', { url: readUrl, headers: auth }));
  results.push(await measure('read by id, uncached, crud direct', { url: directReadUrl, headers: auth }));
  results.push(await measure('list (limit 20), uncached', { url: listUrl, headers: auth }));
  await crud.stop();

  const baseline = results[0].rps;
  const rpsOf = (label) => results.find((r) => r.label === label).rps;
  const rows = results.map((r) => ({
    scenario: r.label,
    rps: Math.round(r.rps),
    'p50 ms': r.p50,
    'p99 ms': r.p99,
    'vs baseline': `${(r.rps / baseline).toFixed(2)}x`,
    ...(r.failed ? { failed: r.failed } : {}),
  }));
  console.table(rows);
  const ratio = (a, b) => `${(rpsOf(a) / rpsOf(b)).toFixed(2)}x`;
  console.log(`cached read / uncached read, through the gateway: ${ratio('read by id, cached', 'read by id, uncached')} (goal: at least 4x)`);
  console.log(`cached read / uncached read, crud direct:         ${ratio('read by id, cached, crud direct', 'read by id, uncached, crud direct')}`);
} finally {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  for (const child of children) child.kill('SIGKILL');
  await jwks.close();
  await database.drop();
}
