import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import fc from 'fast-check';
import { startPlatform, type Platform } from '@app/all-in-one';
import { START_BUDGET_MS, testModes, type TestMode } from '@app/testing';
import { operationsOf, type FuzzRequest, type OpenApiDocument, type Operation } from './openapi.js';
import { anyRequest, reproduction, send, violation, type Targets } from './requests.js';
import { openPlatformDependencies, type PlatformDependencies } from '../support/platform.js';

/**
 * Property: whatever a client sends to any operation of the API document (as admin, user,
 * nobody or with a forged token), the platform answers, below 500, and every 4xx is
 * problem+json (the OAuth error shape on the token and revoke endpoints, an HTML page on the
 * browser sign-in pages of Google and GitHub).
 *
 * Seeded and reproducible: FUZZ_SEED replays a run; FUZZ_REQUESTS sets the total request
 * count (about 3,000 by default, shared by the modes; `npm run fuzz` sends more). Every
 * distinct failure (status and operation) is reported with the shortest request that caused it;
 * FUZZ_REPORT=<file> appends that report to a file, FUZZ_STATS=<file> the statuses seen per operation.
 */
const modes = testModes();
const TOTAL = Number(process.env.FUZZ_REQUESTS ?? 3000);
const PER_MODE = Math.ceil(TOTAL / modes.length);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const ANSWER_WITHIN_MS = 15_000;
const ADMIN_EMAIL = 'admin@example.com';
const ADMIN_PASSWORD = 'the bootstrap admin password';
const USER_PASSWORD = 'a user password, long enough';

// Starting the platform, then the requests (a few ms each; argon2 on the token endpoint).
jest.setTimeout(START_BUDGET_MS + PER_MODE * 200);

describe.each(modes)('fuzzing every operation of the API document (%s)', (mode: TestMode) => {
  let platform: Platform;
  let deps: PlatformDependencies;
  let operations: Operation[];
  let userEmail: string;
  const targets: Targets = { tokens: { admin: '', user: '' }, ids: [] };

  const call = async (method: string, path: string, body?: unknown, token?: string) => {
    const response = await fetch(`${platform.url}${path}`, {
      method,
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json().catch(() => undefined)) as Record<string, unknown>[] | Record<string, unknown> };
  };
  /** Signs in through the real token endpoint, as a client would. */
  const signIn = async (username: string, password: string) => {
    const response = await fetch(`${platform.url}/api/v1/sso/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', username, password }),
    });
    return response.status === 200 ? String(((await response.json()) as { access_token: string }).access_token) : undefined;
  };
  const firstId = (reply: { body: unknown }) => (reply.body as { id: string }[])[0]!.id;

  beforeAll(async () => {
    deps = await openPlatformDependencies(mode, { BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD });
    platform = await startPlatform(deps.config, deps.logger, { dependencies: deps, port: 0 });
    // The bootstrap admin is created once sso listens: poll briefly.
    for (let attempt = 0; attempt < 200 && !targets.tokens.admin; attempt++) {
      targets.tokens.admin = (await signIn(ADMIN_EMAIL, ADMIN_PASSWORD)) ?? '';
      if (!targets.tokens.admin) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(targets.tokens.admin).not.toBe('');
    const admin = targets.tokens.admin;
    userEmail = `fuzz-${randomUUID().slice(0, 8)}@example.com`;
    const identity = await call('POST', '/api/v1/identity', { name: 'Fuzz User', email: userEmail });
    expect(identity.status).toBe(201);
    const credential = await call('POST', '/api/v1/credentials', { identity_id: firstId(identity), provider: 'LOCAL', secret: USER_PASSWORD }, admin);
    expect(credential.status).toBe(201);
    targets.tokens.user = (await signIn(userEmail, USER_PASSWORD)) ?? '';
    expect(targets.tokens.user).not.toBe('');
    const product = await call('POST', '/api/v1/products', { name: 'Fuzz', price: 1.5, stock: 3, category: 'Fruits', perishable: false }, admin);
    const post = await call('POST', '/api/v1/posts', { title: 'A fuzz post', content: 'Content long enough', authorId: 'fuzz', slug: 'fuzz-post' }, admin);
    expect([product.status, post.status]).toEqual([201, 201]);
    targets.ids.push(firstId(identity), firstId(credential), firstId(product), firstId(post));
    const document = (await (await fetch(`${platform.url}/docs/json`)).json()) as OpenApiDocument;
    operations = operationsOf(document);
  });
  afterAll(async () => {
    await platform?.close();
    await deps?.dispose();
  });

  it(`answers ${PER_MODE} hostile requests below 500, every 4xx as problem+json (seed ${SEED})`, async () => {
    expect(operations.length).toBeGreaterThan(20);
    const failures = new Map<string, { request: FuzzRequest; answer: string; count: number }>();
    let signedInAt = Date.now();
    let sent = 0;
    const statuses = new Map<string, { count: number; ms: number }>();
    await fc.assert(
      fc.asyncProperty(anyRequest(operations, targets), async (request) => {
        // Access tokens live 15 minutes; a long `npm run fuzz` signs in again (the fuzz may have changed the user).
        if (Date.now() - signedInAt > 5 * 60_000) {
          signedInAt = Date.now();
          targets.tokens.admin = (await signIn(ADMIN_EMAIL, ADMIN_PASSWORD)) ?? targets.tokens.admin;
          targets.tokens.user = (await signIn(userEmail, USER_PASSWORD)) ?? targets.tokens.user;
        }
        sent++;
        let problem: string | undefined;
        let answer: string;
        try {
          const started = performance.now();
          const reply = await send(new URL(platform.url), request, ANSWER_WITHIN_MS);
          const tally = statuses.get(`${request.operation} ${reply.status}`) ?? { count: 0, ms: 0 };
          statuses.set(`${request.operation} ${reply.status}`, { count: tally.count + 1, ms: tally.ms + performance.now() - started });
          problem = violation(request, reply);
          answer = `${reply.status} ${String(reply.headers['content-type'] ?? '')} ${reply.body.slice(0, 300)}`;
        } catch (error) {
          problem = 'no answer';
          answer = (error as Error).message;
        }
        if (problem === undefined) return true;
        const key = `${problem} on ${request.operation}`;
        const seen = failures.get(key);
        const size = (candidate: FuzzRequest) => candidate.path.length + (candidate.body?.length ?? 0);
        if (!seen) failures.set(key, { request, answer, count: 1 });
        else {
          seen.count++;
          if (size(request) < size(seen.request)) Object.assign(seen, { request, answer });
        }
        return true;
      }),
      { seed: SEED, numRuns: PER_MODE, endOnFailure: true },
    );
    const report = [...failures.entries()].map(([key, { request, answer, count }]) => `- ${key} (${count}×)\n  ${reproduction(request)}\n  answer: ${answer}`).join('\n');
    if (process.env.FUZZ_STATS) appendFileSync(process.env.FUZZ_STATS, [...statuses].map(([key, { count, ms }]) => `${key} ${count}× ${Math.round(ms / count)} ms`).sort().join('\n') + '\n');
    if (failures.size && process.env.FUZZ_REPORT) appendFileSync(process.env.FUZZ_REPORT, `\n## ${mode}, seed ${SEED}, ${sent} requests\n${report}\n`);
    expect({ seed: SEED, mode, sent, failures: report.split('\n') }).toEqual({ seed: SEED, mode, sent: PER_MODE, failures: [''] });
  });
});
