// `peer` (BENCH_ONLY=peer): the token endpoint beside node-oidc-provider (peer-server.ts, its
// own process), scenario by scenario, on the embedded database and on real Postgres
// (BENCH_PEER_DATABASES). Each scenario is measured platform, peer, peer, platform (ABBA): a
// drift over the phase (the machine's other work, the load generator warming up) weighs on
// both alike. A round's ratio is the platform's mean over the peer's; after each round the
// median of the rounds so far is printed, with the targets of issue 27.
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { measure, measureLoop, median, type ClosedLoop, type Load } from './measure.js';
import { createDatabase, expectStatus, form, FORM, nodeEnv, startAllInOne, type AllInOne } from './platform.js';
import { answers, removeDir, startProcess, stopProcess, tempDir, withParts } from './processes.js';
import type { ScenarioKey } from './scenarios.js';
import { CONNECTIONS, DURATION, PEER_DATABASES, PEER_SCENARIOS, ROOT, type PeerDatabase } from './settings.js';
import { authorizationCodeRoundTrip, createIntrospector, createUser } from './tokens.js';
import { freePort } from '@app/testing';

/** What each side measures: an autocannon load, or a closed loop (each request needs the last answer). */
type Measured = { load: Load } | { loop: ClosedLoop };

interface Side {
  base: string;
  clientCredentials: Measured;
  introspection: Measured;
  refresh: Measured;
  refreshIntrospection: Measured;
  authorizationCode: Measured;
}

const SCENARIOS = {
  clientCredentials: { key: 'clientCredentials', label: 'client_credentials grant', target: 1.2 },
  // The peer's is of an opaque token: it refuses to introspect its JWTs.
  introspection: { key: 'introspection', label: 'introspection, access token', target: undefined },
  refresh: { key: 'refresh', label: 'refresh_token grant (rotating)', target: 0.7 },
  refreshIntrospection: { key: 'introspection', label: 'introspection, refresh token', target: 1.0 },
  authorizationCode: { key: 'authorizationCode', label: 'authorize, login, code, token', target: 0.9 },
} as const satisfies Record<string, { key: ScenarioKey; label: string; target: number | undefined }>;
type Scenario = keyof typeof SCENARIOS;

const unknownScenario = PEER_SCENARIOS.find((name) => !(name in SCENARIOS));
if (unknownScenario !== undefined) {
  console.error(`BENCH_PEER_SCENARIOS takes a comma-separated list of ${Object.keys(SCENARIOS).join(', ')} (got ${JSON.stringify(unknownScenario)})`);
  process.exit(2);
}
/** The scenarios this run measures: BENCH_PEER_SCENARIOS, or all. */
const RUN_SCENARIOS = (PEER_SCENARIOS.length > 0 ? PEER_SCENARIOS : Object.keys(SCENARIOS)) as Scenario[];

/** Each round's ratios (platform / peer), by database and scenario. */
const ratios = new Map<string, number[]>();

const REDIRECT_URI = 'http://localhost:8080/callback';

const run = (round: number, side: string, base: string, scenario: Scenario, measured: Measured) => {
  const { key, label } = SCENARIOS[scenario];
  const text = `${side}: ${label}`;
  return 'load' in measured ? measure(round, key, measured.load, text) : measureLoop(round, key, base, measured.loop, text);
};

/** A closed loop in which each worker rotates its own refresh token, `next` of its worker's. */
function rotating(path: string, tokens: string[], extra: Record<string, string> = {}): Measured {
  return {
    loop: {
      next: (worker) => ({ path, method: 'POST', headers: FORM, body: form({ grant_type: 'refresh_token', refresh_token: tokens[worker]!, ...extra }) }),
      settle: (worker, status, body) => {
        if (status !== 200) return false;
        tokens[worker] = (JSON.parse(body) as { refresh_token: string }).refresh_token;
        return true;
      },
    },
  };
}

/** Introspects `token` once, and refuses to measure unless the answer says active. */
async function introspectionOf(url: string, authorization: string, token: string, what: string): Promise<Measured> {
  const load = { url, method: 'POST', headers: { ...FORM, authorization }, body: form({ token }) };
  const probe = await expectStatus(await fetch(url, { method: 'POST', headers: load.headers, body: load.body }), 200, `introspecting ${what}`);
  const answer = (await probe.json()) as { active?: boolean };
  if (answer.active !== true) throw new Error(`introspection said ${what} is not active: ${JSON.stringify(answer)}`);
  return { load };
}

/** The platform's side: the same requests tokens.ts measures, and a refresh token introspected. */
async function platformSide(platform: AllInOne): Promise<Side> {
  const tag = randomBytes(4).toString('hex');
  const { secret, clientAuth } = await createIntrospector(platform, tag);
  const { email, password } = await createUser(platform, tag);
  const tokenUrl = `${platform.base}/api/v1/sso/token`;
  const post = async (body: Record<string, string>, what: string) =>
    (await (await expectStatus(await fetch(tokenUrl, { method: 'POST', headers: FORM, body: form(body) }), 200, what)).json()) as { access_token: string; refresh_token: string };
  const login = { grant_type: 'password', username: email, password };
  const refreshTokens: string[] = [];
  for (let i = 0; i < CONNECTIONS; i++) refreshTokens.push((await post(login, 'signing the bench user in')).refresh_token);
  const introspectUrl = `${platform.base}/api/v1/sso/introspect`;
  return {
    base: platform.base,
    clientCredentials: { load: { url: tokenUrl, method: 'POST', headers: FORM, body: form({ grant_type: 'client_credentials', client_secret: secret }) } },
    introspection: await introspectionOf(introspectUrl, clientAuth, (await post({ grant_type: 'client_credentials', client_secret: secret }, 'a token to introspect')).access_token, 'an access token'),
    refresh: rotating('/api/v1/sso/token', refreshTokens),
    refreshIntrospection: await introspectionOf(introspectUrl, clientAuth, (await post(login, 'a refresh token to introspect')).refresh_token, 'a refresh token'),
    authorizationCode: { loop: { run: await authorizationCodeRoundTrip(platform, email, password) } },
  };
}

/** Every cookie an answer sets, as a Cookie header's pairs. */
const cookiesOf = (headers: Record<string, string | string[] | undefined>) =>
  [headers['set-cookie'] ?? []].flat().map((cookie) => cookie.split(';')[0]!);

/**
 * One browser sign-in at the peer, as at the platform: the authorization request, the login
 * page, its form (argon2id), the resumed authorization that redirects with the code, and the
 * code redeemed with its PKCE verifier; no session is kept, so each signs in afresh. Resolves
 * the refresh token, or undefined when a step went wrong.
 */
function peerCodeRoundTrip(email: string, password: string): (pool: Pool) => Promise<string | undefined> {
  const verifier = randomBytes(32).toString('base64url');
  const authorize = `/auth?${form({
    response_type: 'code',
    client_id: 'bench-app',
    redirect_uri: REDIRECT_URI,
    // offline_access with consent: the peer's condition for a refresh token.
    scope: 'openid offline_access',
    prompt: 'consent',
    state: 'bench',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })}`;
  return async (pool) => {
    const started = await pool.request({ path: authorize, method: 'GET' });
    await started.body.text();
    const interaction = started.statusCode === 303 ? String(started.headers.location) : '';
    if (!interaction.startsWith('/interaction/')) return undefined;
    const cookies = cookiesOf(started.headers);
    const page = await pool.request({ path: interaction, method: 'GET', headers: { cookie: cookies.join('; ') } });
    await page.body.text();
    if (page.statusCode !== 200) return undefined;
    const signedIn = await pool.request({
      path: `${interaction}/login`,
      method: 'POST',
      headers: { ...FORM, cookie: cookies.join('; ') },
      body: form({ username: email, password }),
    });
    await signedIn.body.text();
    if (signedIn.statusCode !== 303) return undefined;
    const resumed = await pool.request({ path: new URL(String(signedIn.headers.location)).pathname, method: 'GET', headers: { cookie: [...cookies, ...cookiesOf(signedIn.headers)].join('; ') } });
    await resumed.body.text();
    const code = resumed.statusCode === 303 ? new URL(String(resumed.headers.location)).searchParams.get('code') : null;
    if (!code) return undefined;
    const token = await pool.request({
      path: '/token',
      method: 'POST',
      headers: FORM,
      body: form({ grant_type: 'authorization_code', client_id: 'bench-app', redirect_uri: REDIRECT_URI, code, code_verifier: verifier }),
    });
    const body = await token.body.text();
    return token.statusCode === 200 ? (JSON.parse(body) as { refresh_token?: string }).refresh_token : undefined;
  };
}

/** node-oidc-provider in its own process, and its side: a service client and a user, as on the platform. */
async function startPeer() {
  return withParts(async (own) => {
    const dir = tempDir('peer');
    own(async () => removeDir(dir));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const secret = randomBytes(32).toString('base64url');
    const email = 'bench-user@example.com';
    const password = randomBytes(18).toString('base64url');
    const handle = await startProcess('peer', process.execPath, [join(ROOT, 'bench/dist/peer-server.js')], {
      env: nodeEnv({
        PORT: String(port),
        PEER_USER_EMAIL: email,
        PEER_USER_PASSWORD: password,
        PEER_SERVICE_SECRET: secret,
        PEER_REDIRECT_URI: REDIRECT_URI,
        PEER_COOKIE_KEY: randomBytes(32).toString('base64url'),
      }),
      log: join(dir, 'peer.log'),
      ready: answers(`${base}/ready`),
    });
    own(() => stopProcess(handle));

    const pool = new Pool(base, { connections: 1 });
    const signIn = peerCodeRoundTrip(email, password);
    const refreshTokens: string[] = [];
    for (let i = 0; i <= CONNECTIONS; i++) {
      const token = await signIn(pool);
      if (!token) throw new Error(`the peer's code flow gave no refresh token; its log ends in ${join(dir, 'peer.log')}`);
      refreshTokens.push(token);
    }
    await pool.close();
    const introspected = refreshTokens.pop()!;
    const tokenUrl = `${base}/token`;
    const service = { grant_type: 'client_credentials', client_id: 'bench-service', client_secret: secret };
    const granted = await expectStatus(await fetch(tokenUrl, { method: 'POST', headers: FORM, body: form(service) }), 200, "the peer's client_credentials");
    const { access_token } = (await granted.json()) as { access_token: string };
    if (access_token.split('.').length !== 3) throw new Error(`the peer's access token is not a JWT: ${access_token.slice(0, 40)}`);
    // The peer refuses to introspect its JWT access tokens: its introspection is measured on an opaque one.
    const opaque = await expectStatus(await fetch(tokenUrl, { method: 'POST', headers: FORM, body: form({ ...service, resource: 'urn:bench:opaque' }) }), 200, "the peer's opaque token");
    const basic = `Basic ${Buffer.from(`bench-service:${secret}`).toString('base64')}`;
    const side: Side = {
      base,
      clientCredentials: { load: { url: tokenUrl, method: 'POST', headers: FORM, body: form(service) } },
      introspection: await introspectionOf(`${base}/token/introspection`, basic, ((await opaque.json()) as { access_token: string }).access_token, "the peer's opaque access token"),
      refresh: rotating('/token', refreshTokens, { client_id: 'bench-app' }),
      refreshIntrospection: await introspectionOf(`${base}/token/introspection`, basic, introspected, "the peer's refresh token"),
      authorizationCode: { loop: { run: async (pool) => (await signIn(pool)) !== undefined } },
    };
    return side;
  });
}

async function startPlatformOn(database: PeerDatabase) {
  return withParts(async (own) => {
    const env: Record<string, string> = {};
    if (database === 'postgres') {
      const created = await createDatabase();
      own(() => created.drop());
      env.DATABASE_URL = created.url;
    }
    const platform = await startAllInOne({ env });
    own(() => platform.stop());
    return platformSide(platform);
  });
}

const fmt = (value: number | undefined) => (value === undefined ? '   -  ' : `${value.toFixed(2)}x`);

/** The median ratio of each scenario over the rounds so far, against issue 27's targets. */
function reportPeer(): void {
  console.log('\n  peer: platform / node-oidc-provider, median of the rounds so far (ratios of means, ABBA)');
  for (const database of PEER_DATABASES) {
    for (const scenario of RUN_SCENARIOS) {
      const { label, target } = SCENARIOS[scenario];
      const values = ratios.get(`${database}:${scenario}`) ?? [];
      const value = median(values);
      const verdict = target === undefined || value === undefined ? '' : value >= target ? `PASS (>= ${target}x)` : `FAIL (>= ${target}x)`;
      console.log(`  ${database.padEnd(9)} ${label.padEnd(34)} ${fmt(value)}  ${verdict}  (${values.length} round(s))`);
    }
  }
}

/** One round of the peer phase: for each database, the platform and the peer, scenario by scenario, ABBA. */
export async function peerRound(round: number): Promise<void> {
  for (const database of PEER_DATABASES) {
    const platform = await startPlatformOn(database);
    try {
      const peer = await startPeer();
      try {
        // Both warm before either counts: a process's first seconds (JIT, its start's garbage)
        // would weigh on whichever is measured first.
        for (const side of [platform, peer]) {
          if ('load' in side.clientCredentials) await autocannon({ ...side.clientCredentials.load, connections: CONNECTIONS, duration: DURATION });
        }
        for (const scenario of RUN_SCENARIOS) {
          const ours = [await run(round, `${database} platform`, platform.base, scenario, platform[scenario])];
          const theirs = [await run(round, 'peer', peer.base, scenario, peer[scenario])];
          theirs.push(await run(round, 'peer', peer.base, scenario, peer[scenario]));
          ours.push(await run(round, `${database} platform`, platform.base, scenario, platform[scenario]));
          // A broken measurement (printed as such) leaves the round's ratio out.
          if ([...ours, ...theirs].some((row) => row.failures > 0)) continue;
          const mean = (rows: { rps: number }[]) => rows.reduce((sum, row) => sum + row.rps, 0) / rows.length;
          const key = `${database}:${scenario}`;
          ratios.set(key, [...(ratios.get(key) ?? []), mean(ours) / mean(theirs)]);
        }
      } finally {
        await peer.stop();
      }
    } finally {
      await platform.stop();
    }
  }
  reportPeer();
}
