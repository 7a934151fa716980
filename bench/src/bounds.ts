// 5. The time bounds the test suite leaves here: a test on a loaded machine asserts that a
// revocation is applied and a cut answered; how soon is a figure of this bench.
import { appendFileSync } from 'node:fs';
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { startSplit as startSplitCluster, type SplitCluster } from '@app/split';
import { timesRow } from './measure.js';
import { ADMIN_EMAIL, createDatabase, createProduct, expectStatus, form, FORM, startSplit, type Jwks } from './platform.js';
import { lastLines, removeDir, sleep, START_TIMEOUT_MS, tempDir } from './processes.js';
import type { Row } from './scenarios.js';
import { CONNECTIONS, LOG_LEVEL, NATS_URL, PATH, REDIS_URL } from './settings.js';

/** Revocations timed per round in (r). */
const REVOCATION_SAMPLES = 10;
/** How long (r) and (u) wait for what must happen before they call the run broken. */
const BOUND_GUARD_MS = 15_000;
/** How long (u) keeps crud cut off under load. */
const CUT_MS = 3_000;

/**
 * (r) Split mode as `npm run start:split -- --replicas 2` runs it (apps/split's launcher: every
 * service twice, real Postgres, Redis and NATS): a sign-in accepted by every replica of every
 * verifier, revoked through one sso replica or the other; the time from sso's answer until
 * the last of them refuses it (each polled every 10 ms).
 */
export async function revocationScenario(round: number): Promise<Row> {
  const dir = tempDir('replicas');
  const database = await createDatabase();
  const password = randomBytes(18).toString('base64url');
  let cluster: SplitCluster | undefined;
  try {
    cluster = await startSplitCluster({
      replicas: 2,
      port: 0,
      readyTimeoutMs: START_TIMEOUT_MS,
      output: (name, line) => appendFileSync(join(dir, 'split.log'), `[${name}] ${line}\n`),
      env: {
        PATH,
        DATABASE_URL: database.url,
        REDIS_URL,
        NATS_URL,
        LOG_LEVEL,
        CACHE_KEY_PREFIX: `bench:${randomUUID().slice(0, 8)}:`,
        BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
        BOOTSTRAP_ADMIN_PASSWORD: password,
      },
    });
    const url = cluster.url;
    const signIn = () =>
      fetch(`${url}/api/v1/sso/token`, {
        method: 'POST',
        headers: FORM,
        body: form({ grant_type: 'password', username: ADMIN_EMAIL, password }),
        signal: AbortSignal.timeout(BOUND_GUARD_MS),
      });
    // sso creates the bootstrap admin just after it answers: wait for it.
    const deadline = Date.now() + 60_000;
    while ((await signIn()).status !== 200) {
      if (Date.now() > deadline) throw new Error(`the bootstrap admin cannot sign in; the processes' log ends:\n${lastLines(join(dir, 'split.log'))}`);
      await sleep(250);
    }
    const times: number[] = [];
    let failures = 0;
    for (let sample = 0; sample < REVOCATION_SAMPLES; sample++) {
      const session = (await (await expectStatus(await signIn(), 200, 'signing the admin in')).json()) as { access_token: string; refresh_token: string };
      const sub = (JSON.parse(Buffer.from(session.access_token.split('.')[1]!, 'base64url').toString()) as { sub: string }).sub;
      const auth = { authorization: `Bearer ${session.access_token}` };
      // What each verifier guards for the token's subject: the edge, and every replica directly.
      const where = [
        `${url}/api/v1/products?limit=1`,
        ...cluster.replicas.crud.map((base) => `${base}/api/v1/products?limit=1`),
        ...cluster.replicas.identity.map((base) => `${base}/api/v1/identity/${sub}`),
        ...cluster.replicas.credentials.map((base) => `${base}/api/v1/credentials?identity_id=${sub}`),
        ...cluster.replicas.sso.map((base) => `${base}/api/v1/sso/userinfo`),
      ];
      for (const at of where) await expectStatus(await fetch(at, { headers: auth }), 200, `the fresh token at ${at}`);
      const sso = cluster.replicas.sso[sample % cluster.replicas.sso.length]!;
      const revoked = await fetch(`${sso}/api/v1/sso/revoke`, { method: 'POST', headers: FORM, body: form({ token: session.refresh_token }) });
      await expectStatus(revoked, 200, 'revoking the sign-in');
      const revokedAt = performance.now();
      const reached = await Promise.all(
        where.map(async (at) => {
          for (;;) {
            const status = (await fetch(at, { headers: auth, signal: AbortSignal.timeout(BOUND_GUARD_MS) })).status;
            if (status === 401) return performance.now() - revokedAt;
            if (status !== 200 || performance.now() - revokedAt > BOUND_GUARD_MS) return undefined;
            await sleep(10);
          }
        }),
      );
      if (reached.some((time) => time === undefined)) failures++;
      else times.push(Math.max(...(reached as number[])));
    }
    return timesRow(round, 'revocationSpread', times, failures);
  } finally {
    await cluster?.stop();
    await database.drop();
    removeDir(dir);
  }
}

/**
 * (u) The gateway in front of crud through a proxy, read by BENCH_CONNECTIONS clients in a
 * closed loop; the proxy cuts crud off for CUT_MS and forwards again. Each answer other than
 * 200 must be a 502 or 503 problem; the times are how long each of those took (from its
 * request's start).
 */
export async function cutScenario(round: number, jwks: Jwks): Promise<Row> {
  const split = await startSplit(jwks, { relay: true });
  try {
    const token = await jwks.mint();
    const url = `${split.base}/api/v1/products/${await createProduct(split.base, token)}`;
    const headers = { authorization: `Bearer ${token}` };
    const refused: number[] = [];
    let failures = 0;
    let running = true;
    const worker = async () => {
      while (running) {
        const started = performance.now();
        try {
          const response = await fetch(url, { headers, signal: AbortSignal.timeout(BOUND_GUARD_MS) });
          await response.arrayBuffer();
          if (response.status === 200) continue;
          const problem = (response.headers.get('content-type') ?? '').startsWith('application/problem+json');
          if ([502, 503].includes(response.status) && problem) refused.push(performance.now() - started);
          else failures++;
        } catch {
          failures++;
        }
        // A refusal comes at once: let the other timers (the cut's own) run.
        await sleep(5);
      }
    };
    const workers = Array.from({ length: CONNECTIONS }, () => worker());
    await sleep(1_000);
    split.crudRelay!.cut();
    await sleep(CUT_MS);
    split.crudRelay!.restore();
    // Served again once the path is back (the gateway's connections to it are new ones).
    const deadline = Date.now() + BOUND_GUARD_MS;
    while ((await fetch(url, { headers }).then((response) => response.status, () => 0)) !== 200 && Date.now() < deadline) await sleep(50);
    running = false;
    await Promise.all(workers);
    if ((await fetch(url, { headers })).status !== 200) failures++;
    // No refusal at all: the cut was not seen, nothing was measured.
    if (refused.length === 0) failures++;
    return timesRow(round, 'cutAnswered', refused, failures);
  } finally {
    await split.stop();
  }
}
