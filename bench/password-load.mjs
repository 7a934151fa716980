/* global fetch */
// Does password verification block the event loop? Measures the p99 of cached identity
// reads through the gateway (all-in-one, embedded defaults) with no password work, then
// while 50 argon2id verifications are in flight at all times. Also reports what one hash
// costs with the configured parameters. Run after `npx turbo run build`:
//   node bench/password-load.mjs [seconds per phase, default 10]
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import argon2 from 'argon2';
import { startPlatform } from '@app/all-in-one';
import { INTERNAL_ROUTES } from '@app/contracts';
import { createLogger } from '@app/platform';
import { openTestDependencies, startTokenIssuer } from '@app/testing';

const seconds = Number(process.argv[2] ?? 10);
const CONCURRENT_VERIFICATIONS = 50;
const PASSWORD = 'correct horse battery staple';

const issuer = await startTokenIssuer();
// ARGON2_* from the environment apply, to compare settings.
const argon2Env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith('ARGON2_')));
const deps = await openTestDependencies('embedded', { ...argon2Env, JWKS_URL: issuer.jwksUrl, PLATFORM_SERVICES: 'identity,credentials' });
const logger = createLogger({ LOG_LEVEL: 'warn' });
const platform = await startPlatform(deps.config, logger, {
  dependencies: { ...deps, logger },
  ports: { gateway: 0, identity: 0, credentials: 0, health: 0 },
});
const { ARGON2_MEMORY_KIB: memoryCost, ARGON2_TIME_COST: timeCost, ARGON2_PARALLELISM: parallelism } = deps.config;

const hashTimes = [];
for (let i = 0; i < 10; i++) {
  const started = performance.now();
  await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost, timeCost, parallelism });
  hashTimes.push(performance.now() - started);
}
hashTimes.sort((a, b) => a - b);

const admin = await issuer.mint(randomUUID(), ['admin']);
const system = await issuer.mint(randomUUID(), ['system']);
const json = async (url, init) => (await fetch(url, init)).json();
const [identity] = await json(`${platform.url}/api/v1/identity`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ name: 'Bench', email: 'bench@example.com' }),
});
await json(`${platform.url}/api/v1/credentials`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` },
  body: JSON.stringify({ identity_id: identity.id, provider: 'LOCAL', secret: PASSWORD }),
});
const token = await issuer.mint(identity.id);
const readUrl = `${platform.url}/api/v1/identity/${identity.id}`;
await fetch(readUrl, { headers: { authorization: `Bearer ${token}` } }); // the record is cached from here on

const reads = () =>
  autocannon({ url: readUrl, connections: 10, duration: seconds, headers: { authorization: `Bearer ${token}` } });

let verifying = false;
let verifications = 0;
const verifier = async () => {
  while (verifying) {
    const result = await json(`${platform.services.credentials.url}${INTERNAL_ROUTES.verifyPassword}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${system}` },
      body: JSON.stringify({ email: 'bench@example.com', password: PASSWORD }),
    });
    if (!result.valid) throw new Error('verification failed');
    verifications++;
  }
};

// Event-loop delay shows whether password work blocks the loop itself (it must not).
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();
const idle = await reads();
const idleLoopP99 = loop.percentile(99) / 1e6;
loop.reset();
verifying = true;
const workers = Array.from({ length: CONCURRENT_VERIFICATIONS }, verifier);
const loaded = await reads();
const loadedLoopP99 = loop.percentile(99) / 1e6;
verifying = false;
await Promise.all(workers);
loop.disable();

const row = (label, result) => ({
  phase: label,
  'reads/s': Math.round(result.requests.average),
  'p50 ms': result.latency.p50,
  'p99 ms': result.latency.p99,
  errors: result.errors + result.non2xx,
  'loop delay p99 ms': Number((label.includes('+') ? loadedLoopP99 : idleLoopP99).toFixed(1)),
});
console.log(`libuv thread pool: ${process.env.UV_THREADPOOL_SIZE ?? 4} threads; ARGON2_CONCURRENCY=${deps.config.ARGON2_CONCURRENCY}`);
console.log(`argon2id m=${memoryCost} KiB, t=${timeCost}, p=${parallelism}: one hash takes ${hashTimes[5].toFixed(1)} ms (median of 10; min ${hashTimes[0].toFixed(1)}, max ${hashTimes[9].toFixed(1)})`);
console.table([row('cached reads alone', idle), row(`cached reads + ${CONCURRENT_VERIFICATIONS} verifications in flight`, loaded)]);
console.log(`verifications completed during the loaded phase: ${verifications} (${(verifications / seconds).toFixed(1)}/s)`);
console.log(`p99 ratio loaded/idle: ${(loaded.latency.p99 / idle.latency.p99).toFixed(2)}`);

await platform.close();
await deps.dispose();
await issuer.close();
