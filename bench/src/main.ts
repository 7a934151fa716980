// `npm run bench`: the speed targets of issues 10 and 11, each measured beside an nginx baseline in
// the same round, with autocannon on loopback. Per round, in this order, one system at a time
// (each is stopped before the next starts, so none steals CPU from another):
//   1. baseline: nginx proxying a bare Fastify route (nginx.ts, bare.ts);
//   2. all-in-one, what `npm start` runs (embedded PGlite, in-process cache and bus):
//      (a) authenticated cached read-by-id, (b) unauthenticated ping, then (a) again at half
//      the rate (a) reached, for its p99; the token endpoint (tokens.ts): (d) client_credentials
//      and (e) refresh_token grants, (f) password logins, (g) token introspection, (h) browser
//      sign-in round trips, then (a) at half rate beside 40 logins a second; nginx serving (a)'s
//      bytes as a static file; then what /metrics costs (>= 0.95x) and what the request log
//      costs (>= 0.98x): (a) on two more all-in-ones each, METRICS=on and off, LOG_LEVEL=info
//      and warn;
//   3. split (platform.ts): crud and the gateway as two processes on real Postgres, Redis and
//      NATS: (c) cached read-by-id via the gateway, with one crud process, with 10,000 revoked
//      sessions in every verifier's set, and with two crud replicas;
//   4. `npm start` exactly as a newcomer runs it (npm-start.ts);
//   5. the time bounds the test suite leaves to the bench (bounds.ts);
//   6. the embedded database beside the event loop (embedded.ts): a cached read's p99 beside
//      deep lists and beside sign-ins;
//   7. the token endpoint beside node-oidc-provider, on PGlite and on Postgres (peer.ts);
//   and only when BENCH_ONLY names it, `compare` (compare.ts): two variants of the platform's
//   headline figures side by side, and `lists` (lists.ts): a filtered, sorted page of a
//   million products, deep by cursor and by offset, and its counts.
// Then a table per round and one with the median of the rounds (ratios to nginx are taken per
// round, then their median), each target with PASS or FAIL. A failed target is a result (exit
// 0); a broken run is not (exit 1): a process that does not start, or any non-2xx answer,
// error or timeout during a scenario, which then does not count. The knobs: settings.ts.
import { existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { compareRound, reportCompare } from './compare.js';
import { embeddedScenario } from './embedded.js';
import { cutScenario, revocationScenario } from './bounds.js';
import { listScenarios } from './lists.js';
import { broken, measure } from './measure.js';
import { startBaseline, startStaticFile } from './nginx.js';
import { npmStartScenario, reportStart, type StartRow } from './npm-start.js';
import { createProduct, ENTRIES, PRODUCT, expectStatus, startAllInOne, startJwks, startSplit, type AllInOne, type Jwks } from './platform.js';
import { cleanUp, cleanUpOnExit } from './processes.js';
import { peerRound } from './peer.js';
import { profile } from './profile.js';
import { report, reportRound } from './report.js';
import type { Row, ScenarioKey } from './scenarios.js';
import { revokedSessions, REVOCATION_COUNT } from './revocations.js';
import { CONNECTIONS, DURATION, EXTRA, LOG_LEVEL, NGINX, NGINX_WORKERS, PROFILE, ROOT, ROUNDS, runs, WARMUP } from './settings.js';
import { tokenScenarios } from './tokens.js';

const load = () => loadavg().map((n) => n.toFixed(2)).join(' ');

/**
 * Runs one system's scenarios; when the system fails to start or breaks, says so loudly,
 * counts the round's run as broken and lets the round go on with the next system.
 */
async function phase(round: number, name: string, run: () => Promise<unknown>): Promise<void> {
  try {
    await run();
  } catch (error) {
    const message = (error as Error).message;
    console.log(`  !!!!! BROKEN: ${name} failed, its scenarios do not count this round:\n${message}`);
    broken.push(`round ${round}: ${name}: ${message.split('\n')[0]}`);
  }
}

async function allInOneScenarios(round: number, rows: Row[]): Promise<void> {
  const platform = await startAllInOne();
  try {
    const auth = { authorization: `Bearer ${platform.token}` };
    const readUrl = `${platform.base}/api/v1/products/${platform.id}`;
    const read = await measure(round, 'read', { url: readUrl, headers: auth });
    rows.push(read);
    rows.push(await staticFileOf(round, readUrl, auth, read));
    rows.push(await measure(round, 'ping', { url: `${platform.base}/api/v1/products/ping` }));
    const rate = Math.max(1, Math.floor(read.rps / 2));
    const half = await measure(round, 'half', { url: readUrl, headers: auth, overallRate: rate });
    rows.push({ ...half, rate });
    rows.push(...(await tokenScenarios(round, platform, { url: readUrl, headers: auth, rate, idleP99: half.p99 })));
  } finally {
    await platform.stop();
  }
}

/**
 * nginx serving the read's answer, byte for byte, as a static file, measured while the
 * all-in-one idles: (a) over this is how close the platform comes to the least an HTTP server
 * does for the same bytes.
 */
async function staticFileOf(round: number, readUrl: string, headers: Record<string, string>, read: Row): Promise<Row> {
  const response = await fetch(readUrl, { headers });
  await expectStatus(response, 200, 'the read, for its bytes');
  const file = await startStaticFile(Buffer.from(await response.arrayBuffer()));
  try {
    const row = await measure(round, 'staticFile', { url: file.url });
    return { ...row, readOver: read.failures === 0 && row.rps ? read.rps! / row.rps : undefined };
  } finally {
    await file.stop();
  }
}

/** A setting whose cost (a) measures: two all-in-ones, one with it and one without. */
interface Feature {
  on: Record<string, string>;
  off: Record<string, string>;
  onKey: ScenarioKey;
  offKey: ScenarioKey;
}

const FEATURES = {
  metrics: { on: {}, off: { METRICS: 'off' }, onKey: 'readMetricsOn', offKey: 'readMetricsOff' },
  // warn: the request lines (info) are not written; the rest of the process is the same.
  logs: { on: { LOG_LEVEL: 'info' }, off: { LOG_LEVEL: 'warn' }, onKey: 'readLogsOn', offKey: 'readLogsOff' },
} satisfies Record<string, Feature>;

/**
 * The cost of a feature (/metrics, the request log): two fresh all-in-ones, with and without
 * it, side by side, measured with, without, without, with (ABBA): a drift over the phase (the
 * load generator warming up, the machine's other work) weighs on both alike. Comparing with
 * (a) measured minutes earlier in another process swung the ratio from 0.86 to 0.95 between
 * rounds. The pair runs twice, each time started in the other order: of two identical
 * all-in-ones, the one started first served ~2% less here, a bias of the start order that
 * must not count for or against the feature. Answers the off row with `withFeature`: the
 * rate with it over the rate without.
 */
async function featureCost(round: number, feature: Feature): Promise<Row> {
  const withIt: Row[] = [];
  const without: Row[] = [];
  for (const onFirst of [true, false]) {
    const startOn = () => startAllInOne({ env: feature.on });
    const startOff = () => startAllInOne({ env: feature.off });
    const first = await (onFirst ? startOn : startOff)();
    const second = await (onFirst ? startOff : startOn)().catch(async (error: unknown) => {
      await first.stop();
      throw error;
    });
    const [on, off] = onFirst ? [first, second] : [second, first];
    try {
      const options = (platform: AllInOne) => ({ url: `${platform.base}/api/v1/products/${platform.id}`, headers: { authorization: `Bearer ${platform.token}` } });
      // Both warm before either counts: a platform's first seconds (JIT, its start's garbage)
      // slow its neighbour too, and would weigh on whichever is measured first.
      for (const platform of [off, on]) await autocannon({ ...options(platform), connections: CONNECTIONS, duration: DURATION });
      withIt.push(await measure(round, feature.onKey, options(on)));
      without.push(await measure(round, feature.offKey, options(off)), await measure(round, feature.offKey, options(off)));
      withIt.push(await measure(round, feature.onKey, options(on)));
    } finally {
      await Promise.all([on.stop(), off.stop()]);
    }
  }
  const counted = [...withIt, ...without].every((row) => row.failures === 0);
  const sum = (list: Row[]) => list.reduce((total, row) => total + (row.rps ?? 0), 0);
  return { ...without.at(-1)!, rps: sum(without) / without.length, failures: counted ? 0 : 1, withFeature: sum(withIt) / sum(without) };
}

async function splitScenarios(round: number, jwks: Jwks, rows: Row[]): Promise<void> {
  const split = await startSplit(jwks);
  try {
    const token = await jwks.mint();
    const auth = { authorization: `Bearer ${token}` };
    const id = await createProduct(split.base, token);
    const readUrl = `${split.base}/api/v1/products/${id}`;
    rows.push(await measure(round, 'split', { url: readUrl, headers: auth }));
    if (EXTRA) {
      for (let i = 0; i < 99; i++) await createProduct(split.base, token);
      const listUrl = `${split.base}/api/v1/products?limit=20`;
      rows.push(await measure(round, 'splitList', { url: listUrl, headers: auth }));
      rows.push(await measure(round, 'splitCreate', { url: `${split.base}/api/v1/products`, method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: PRODUCT }));
      await split.restartCrud(0);
      rows.push(await measure(round, 'splitUncached', { url: readUrl, headers: auth }));
      rows.push(await measure(round, 'splitListUncached', { url: listUrl, headers: auth }));
    }
  } finally {
    await split.stop();
  }
}

async function splitRevoked(round: number, jwks: Jwks, rows: Row[]): Promise<void> {
  const revoked = revokedSessions(REVOCATION_COUNT);
  const split = await startSplit(jwks, { revocations: revoked.events });
  try {
    const token = await jwks.mint();
    const id = await createProduct(split.base, token);
    // The set is loaded: a token of a revoked session is refused.
    const refused = await fetch(`${split.base}/api/v1/products/${id}`, { headers: { authorization: `Bearer ${await jwks.mint({ sid: revoked.sid })}` } });
    await expectStatus(refused, 401, 'a token of a seeded revoked session');
    const row = await measure(round, 'splitRevoked', { url: `${split.base}/api/v1/products/${id}`, headers: { authorization: `Bearer ${token}` } });
    const plain = rows.find((other) => other.key === 'split' && other.failures === 0);
    rows.push({ ...row, ofSplit: plain ? row.rps / plain.rps! : undefined });
  } finally {
    await split.stop();
  }
}

async function splitReplicas(round: number, jwks: Jwks, rows: Row[]): Promise<void> {
  const split = await startSplit(jwks, { crudReplicas: 2 });
  try {
    const token = await jwks.mint();
    const id = await createProduct(split.base, token);
    rows.push(await measure(round, 'split2', { url: `${split.base}/api/v1/products/${id}`, headers: { authorization: `Bearer ${token}` } }));
  } finally {
    await split.stop();
  }
}

/** Each round's rows of the npm start scenario (times and memory, not rates). */
const startRounds: StartRow[][] = [];

async function runRound(round: number, jwks: Jwks): Promise<Row[]> {
  console.log(`\nround ${round}/${ROUNDS} (load average ${load()})`);
  const rows: Row[] = [];
  if (runs('nginx')) {
    await phase(round, 'nginx baseline', async () => {
      const baseline = await startBaseline();
      try {
        rows.push(await measure(round, 'baseline', { url: baseline.url }));
      } finally {
        await baseline.stop();
      }
    });
  }
  if (runs('all-in-one')) {
    await phase(round, 'all-in-one', () => allInOneScenarios(round, rows));
    await phase(round, 'all-in-one, METRICS=on beside METRICS=off', async () => rows.push(await featureCost(round, FEATURES.metrics)));
    await phase(round, 'all-in-one, LOG_LEVEL=info beside LOG_LEVEL=warn', async () => rows.push(await featureCost(round, FEATURES.logs)));
  }
  if (runs('split')) {
    await phase(round, 'split mode', () => splitScenarios(round, jwks, rows));
    await phase(round, 'split mode, 10,000 revocations', () => splitRevoked(round, jwks, rows));
    await phase(round, 'split mode, 2 crud replicas', () => splitReplicas(round, jwks, rows));
  }
  if (runs('npm-start')) await phase(round, 'npm start', async () => startRounds.push(await npmStartScenario(round)));
  if (runs('bounds')) {
    await phase(round, 'split mode, 2 replicas of every service: revocation', async () => rows.push(await revocationScenario(round)));
    await phase(round, 'split mode, crud cut under load', async () => rows.push(await cutScenario(round, jwks)));
  }
  if (runs('embedded')) await phase(round, 'embedded database beside the event loop', () => embeddedScenario(round));
  if (runs('peer')) await phase(round, 'peer: node-oidc-provider beside the platform', () => peerRound(round));
  if (runs('lists')) await phase(round, 'lists on 1M products', () => listScenarios(round, jwks));
  if (runs('compare')) {
    const baseline = rows.find((row) => row.key === 'baseline' && row.failures === 0);
    await phase(round, 'compare', () => compareRound(round, jwks, baseline?.rps));
  }
  if (rows.length > 0) reportRound(rows);
  return rows;
}

if (!existsSync(NGINX)) {
  console.error(`nginx is missing (${NGINX}): the baseline needs it. Install it with:\n  apt-get install -y nginx-light`);
  process.exit(1);
}
const missing = Object.values(ENTRIES).filter((entry) => !existsSync(join(ROOT, entry)));
if (missing.length > 0) {
  console.error(`the platform is not built (${missing.join(', ')}): run \`npm run bench\`, which transpiles first, or \`npm run build\``);
  process.exit(1);
}
cleanUpOnExit();

console.log(
  `bench: ${ROUNDS} round(s), ${WARMUP} s warm-up + ${DURATION} s per scenario, ${CONNECTIONS} connections, loopback, ` +
    `${cpus().length} CPUs, load average ${load()}; platform LOG_LEVEL=${LOG_LEVEL}, nginx workers ${NGINX_WORKERS}`,
);
let failed = false;
try {
  const jwks = await startJwks();
  const rounds: Row[][] = [];
  for (let round = 1; round <= ROUNDS; round++) rounds.push(await runRound(round, jwks));
  if (rounds.some((rows) => rows.length > 0)) report(rounds);
  if (startRounds.length > 0) reportStart(startRounds);
  if (runs('compare')) reportCompare();
  if (PROFILE) await profile();
} catch (error) {
  failed = true;
  console.error(`\nbench failed: ${(error as Error).stack ?? String(error)}`);
} finally {
  await cleanUp();
}
console.log(`load average at the end: ${load()}`);
if (broken.length > 0) {
  console.error(`\n!!!!! ${broken.length} run(s) BROKEN (non-2xx answers, errors, timeouts or a system that failed); they were left out:\n  ${broken.join('\n  ')}`);
}
process.exit(failed || broken.length > 0 ? 1 : 0);
