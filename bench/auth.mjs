/* global fetch, setTimeout */
// `npm run bench:auth`: what authentication costs at the edge. The all-in-one platform (real
// identity, credentials and sso; Postgres, Redis and NATS when DATABASE_URL, REDIS_URL and
// NATS_URL are all set, the embedded defaults otherwise), measured with autocannon:
//   - bare: a bare Fastify route in the same process (the machine's ceiling, same run);
//   - an authenticated, cached read-by-id (GET /api/v1/products/{id}, a user's token) through
//     the gateway with its verified-token cache, and through a second gateway without it;
//   - logins per second: the password grant through the gateway (argon2id-bound).
// Each scenario runs BENCH_RUNS times (default 3) for BENCH_DURATION seconds (default 5)
// with BENCH_CONNECTIONS (default 10); the median run is reported. Run after a build.
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import { startPlatform } from '@app/all-in-one';
import { buildApp as buildGateway, routingTable } from '@app/gateway';
import { createLogger } from '@app/platform';
import { openTestDependencies, testModes } from '@app/testing';

const DURATION = Number(process.env.BENCH_DURATION || 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 10);
const RUNS = Number(process.env.BENCH_RUNS || 3);
const ADMIN = { email: 'bench-admin@example.com', password: 'bench admin password' };
const USER_PASSWORD = 'a bench user password';

const mode = testModes().includes('real') ? 'real' : 'embedded';
const deps = await openTestDependencies(mode, {
  BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
  BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
  PLATFORM_SERVICES: 'identity,credentials,sso,crud',
});
// autocannon ends each run mid-request; the gateway logs those aborts, which are not findings.
const logger = createLogger({ LOG_LEVEL: 'fatal' });
const platform = await startPlatform(deps.config, logger, {
  dependencies: { ...deps, logger },
  ports: { gateway: 0, identity: 0, credentials: 0, sso: 0, crud: 0, health: 0 },
});
const urlOf = (name) => platform.services[name].url;

// The same routes through a gateway that verifies every request anew.
const uncachedConfig = {
  ...deps.config,
  IDENTITY_URL: urlOf('identity'),
  CREDENTIALS_URL: urlOf('credentials'),
  SSO_URL: urlOf('sso'),
  CRUD_URL: urlOf('crud'),
  HEALTH_URL: urlOf('health'),
  VERIFIED_TOKEN_CACHE_MAX: 0,
};
const uncached = await buildGateway({ config: uncachedConfig, logger }, { routes: routingTable(uncachedConfig) });
const uncachedUrl = await uncached.listen({ host: '127.0.0.1', port: 0 });

const bare = Fastify();
bare.get('/', async () => ({ ok: true }));
const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });

const post = async (path, body, token) => {
  const response = await fetch(`${platform.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
};
const signIn = (username, password) => post('/api/v1/sso/token', { grant_type: 'password', username, password });

let admin;
for (let attempt = 0; attempt < 200 && !admin; attempt++) {
  const reply = await signIn(ADMIN.email, ADMIN.password);
  if (reply.status === 200) admin = reply.body.access_token;
  else await new Promise((resolve) => setTimeout(resolve, 50));
}
if (!admin) throw new Error('the bootstrap admin could not sign in');
const email = `bench-${randomUUID().slice(0, 8)}@example.com`;
const user = await post('/api/v1/identity', { name: 'Bench User', email });
await post('/api/v1/credentials', { identity_id: user.body[0].id, provider: 'LOCAL', secret: USER_PASSWORD }, admin);
const userToken = (await signIn(email, USER_PASSWORD)).body.access_token;
const product = await post(
  '/api/v1/products',
  { name: 'Banana', price: 1.99, description: 'Yellow and sweet', stock: 120, category: 'Fruits', perishable: true },
  userToken,
);
if (product.status !== 201) throw new Error(`creating the product failed: ${product.status}`);

async function measure(label, options) {
  await autocannon({ ...options, connections: CONNECTIONS, duration: 1 }); // warm-up: JIT, pools, caches
  const runs = [];
  for (let run = 0; run < RUNS; run++) {
    const result = await autocannon({ ...options, connections: CONNECTIONS, duration: DURATION });
    runs.push({ rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, failed: result.non2xx + result.errors + result.timeouts });
  }
  runs.sort((a, b) => a.rps - b.rps);
  const median = runs[Math.floor(runs.length / 2)];
  return { label, ...median, all: runs.map((run) => Math.round(run.rps)) };
}

const read = `/api/v1/products/${product.body[0].id}`;
const results = [
  await measure('bare Fastify route (baseline)', { url: bareUrl }),
  await measure('cached product read by id via gateway, token cache on', { url: `${platform.url}${read}`, headers: { authorization: `Bearer ${userToken}` } }),
  await measure('cached product read by id via gateway, token cache off', { url: `${uncachedUrl}${read}`, headers: { authorization: `Bearer ${userToken}` } }),
  await measure('logins (password grant via gateway)', {
    url: `${platform.url}/api/v1/sso/token`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'password', username: email, password: USER_PASSWORD }),
  }),
];

const baseline = results[0].rps;
console.log(`\nauth bench (${mode} dependencies; ${CONNECTIONS} connections; median of ${RUNS} x ${DURATION}s)`);
for (const result of results) {
  console.log(
    `  ${result.label.padEnd(58)} ${String(Math.round(result.rps)).padStart(6)} rps  p50 ${result.p50} ms  p99 ${result.p99} ms` +
      `  (${((result.rps / baseline) * 100).toFixed(1)}% of bare; runs ${result.all.join('/')})${result.failed ? `  ${result.failed} FAILED` : ''}`,
  );
}

await uncached.close();
await bare.close();
await platform.close();
await deps.dispose();
