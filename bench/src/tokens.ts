// (d)-(h): the token endpoint on the all-in-one, and (a) at half rate beside 40 logins a second.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import type { Pool } from 'undici';
import { failuresOf, measure, measureLoop, printRow } from './measure.js';
import { expectStatus, form, FORM, postJson, type AllInOne } from './platform.js';
import { LABELS, LOGIN_RATE, type Row } from './scenarios.js';
import { CONNECTIONS, DURATION } from './settings.js';

/** (a) at half rate as the round measured it: what (a) beside the logins is compared with. */
export interface HalfRead {
  url: string;
  headers: Record<string, string>;
  rate: number;
  idleP99: number;
}

/**
 * An identity with an API key (client_credentials, introspection), a user with a password
 * (password and refresh grants, browser sign-ins); the logins then run while (a) is asked for
 * at half its maximum rate, whose p99 is compared with the same rate's p99 without them.
 */
export async function tokenScenarios(round: number, platform: AllInOne, read: HalfRead): Promise<Row[]> {
  const rows: Row[] = [];
  const tag = randomUUID().slice(0, 8);
  const { secret, clientAuth } = await createIntrospector(platform, tag);
  const tokenUrl = `${platform.base}/api/v1/sso/token`;
  rows.push(await measure(round, 'clientCredentials', { url: tokenUrl, method: 'POST', headers: FORM, body: form({ grant_type: 'client_credentials', client_secret: secret }) }));

  // (g) A resource server asking about one token again and again, as it does for each request it serves.
  const granted = await fetch(tokenUrl, { method: 'POST', headers: FORM, body: form({ grant_type: 'client_credentials', client_secret: secret }) });
  await expectStatus(granted, 200, 'a token to introspect');
  const introspection = {
    url: `${platform.base}/api/v1/sso/introspect`,
    method: 'POST',
    headers: { ...FORM, authorization: clientAuth },
    body: form({ token: ((await granted.json()) as { access_token: string }).access_token }),
  };
  // Every answer is a 200; this one must also say the token is active, or the scenario measures refusals.
  const probe = await fetch(introspection.url, { method: 'POST', headers: introspection.headers, body: introspection.body });
  await expectStatus(probe, 200, 'introspecting the token');
  const answer = (await probe.json()) as { active?: boolean };
  if (answer.active !== true) throw new Error(`introspection said the bench's fresh token is not active: ${JSON.stringify(answer)}`);
  rows.push(await measure(round, 'introspection', introspection));

  const { email, password } = await createUser(platform, tag);
  const login = { path: '/api/v1/sso/token', method: 'POST' as const, headers: FORM, body: form({ grant_type: 'password', username: email, password }) };

  // Each worker rotates its own refresh token: every answer carries the next one.
  const refreshTokens: string[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    const response = await fetch(tokenUrl, { method: 'POST', headers: FORM, body: login.body, signal: AbortSignal.timeout(10_000) });
    await expectStatus(response, 200, 'signing the bench user in');
    refreshTokens.push(((await response.json()) as { refresh_token: string }).refresh_token);
  }
  rows.push(
    await measureLoop(round, 'refresh', platform.base, {
      next: (worker) => ({ path: login.path, method: 'POST', headers: FORM, body: form({ grant_type: 'refresh_token', refresh_token: refreshTokens[worker]! }) }),
      settle: (worker, status, body) => {
        if (status !== 200) return false;
        refreshTokens[worker] = (JSON.parse(body) as { refresh_token: string }).refresh_token;
        return true;
      },
    }),
  );

  rows.push(await measureLoop(round, 'logins', platform.base, { next: () => login, settle: (_worker, status) => status === 200 }));
  rows.push(await measureLoop(round, 'authorizationCode', platform.base, { run: await authorizationCodeRoundTrip(platform, email, password) }));

  // The read at half rate again, while 40 logins a second (the target rate) run beside it.
  const [readResult, loginResult] = await Promise.all([
    // autocannon's rate limit (per-connection quotas each second), as the target was set with: paced() cannot keep up with the read's thousands a second.
    autocannon({ url: read.url, headers: read.headers, connections: CONNECTIONS, duration: DURATION, overallRate: read.rate }),
    autocannon({ url: tokenUrl, method: 'POST', headers: FORM, body: login.body, connections: CONNECTIONS, duration: DURATION, overallRate: LOGIN_RATE }),
  ]);
  const row: Row = {
    key: 'readDuringLogins',
    rps: readResult.requests.average,
    p50: readResult.latency.p50,
    p99: readResult.latency.p99,
    failures: failuresOf(readResult, loginResult),
    rate: read.rate,
    idleP99: read.idleP99,
  };
  const text = `  ${LABELS[row.key].padEnd(48)} ${String(Math.round(row.rps!)).padStart(7)} rps  p50 ${row.p50} ms  p99 ${row.p99} ms (logins ${Math.round(loginResult.requests.average)}/s)`;
  printRow(round, LABELS[row.key], text, row.failures, 'failures');
  rows.push(row);
  return rows;
}

/**
 * A resource server: an identity an admin gave the `introspect` role (only such an identity may
 * introspect) with an API key, its secret and its HTTP Basic authorization.
 */
export async function createIntrospector(platform: AllInOne, tag: string): Promise<{ secret: string; clientAuth: string }> {
  const service = await postJson(platform.base, '/api/v1/identity', { name: 'Bench Service', email: `bench-service-${tag}@example.com` });
  const promoted = await fetch(`${platform.base}/api/v1/identity/${service.id}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${platform.token}` },
    body: JSON.stringify({ roles: ['introspect'] }),
  });
  await expectStatus(promoted, 200, 'giving the bench service the introspect role');
  const secret = randomBytes(32).toString('base64url');
  // The client's own secret is the API key it sends as client_secret.
  const credential = await postJson(platform.base, '/api/v1/credentials', { identity_id: service.id, provider: 'API_KEY', secret }, platform.token);
  return { secret, clientAuth: `Basic ${Buffer.from(`${encodeURIComponent(credential.id)}:${encodeURIComponent(secret)}`).toString('base64')}` };
}

/** A user who signs in with a password. */
export async function createUser(platform: AllInOne, tag: string): Promise<{ email: string; password: string }> {
  const email = `bench-user-${tag}@example.com`;
  const password = randomBytes(18).toString('base64url');
  const user = await postJson(platform.base, '/api/v1/identity', { name: 'Bench User', email });
  await postJson(platform.base, '/api/v1/credentials', { identity_id: user.id, provider: 'LOCAL', secret: password }, platform.token);
  return { email, password };
}

/** The redirect URI of the bench's registered client: nothing listens there, the bench reads the Location. */
const BENCH_REDIRECT_URI = 'http://localhost:8080/callback';

/**
 * (h) One browser sign-in as a relying party and its user's browser do it: GET the
 * authorization endpoint (the login form, its anti-forgery cookie), POST the form (a
 * password check at the configured argon2id cost, a 303 with the code), then redeem the code
 * with its PKCE verifier. No session cookie is kept, so every round trip signs in afresh.
 */
export async function authorizationCodeRoundTrip(platform: AllInOne, email: string, password: string): Promise<(pool: Pool) => Promise<boolean>> {
  const client = await postJson(platform.base, '/api/v1/sso/clients', { name: 'Bench App', type: 'public', redirect_uris: [BENCH_REDIRECT_URI] }, platform.token);
  const verifier = randomBytes(32).toString('base64url');
  const authorize = `/api/v1/sso/authorize?${form({
    response_type: 'code',
    client_id: client.id,
    redirect_uri: BENCH_REDIRECT_URI,
    scope: 'openid',
    state: 'bench',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })}`;
  const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1];
  return async (pool) => {
    const page = await pool.request({ path: authorize, method: 'GET' });
    const html = await page.body.text();
    const request = field(html, 'request');
    const csrf = field(html, 'csrf');
    if (page.statusCode !== 200 || !request || !csrf) return false;
    const signedIn = await pool.request({
      path: '/api/v1/sso/login',
      method: 'POST',
      headers: { ...FORM, cookie: `sso_form_${request}=${csrf}` },
      body: form({ request, csrf, username: email, password }),
    });
    await signedIn.body.text();
    const code = signedIn.statusCode === 303 ? new URL(String(signedIn.headers.location)).searchParams.get('code') : null;
    if (!code) return false;
    const token = await pool.request({
      path: '/api/v1/sso/token',
      method: 'POST',
      headers: FORM,
      body: form({ grant_type: 'authorization_code', client_id: client.id, redirect_uri: BENCH_REDIRECT_URI, code, code_verifier: verifier }),
    });
    await token.body.text();
    return token.statusCode === 200;
  };
}
