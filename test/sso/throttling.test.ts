import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { describeIf, NEEDS_REAL_SERVERS, startTcpProxy, testModes } from '@app/testing';
import { PAIR_LIMIT } from '../../services/sso/src/tokens/throttle.js';
import { startSsoPlatform, CASES, type SsoPlatform } from './harness.js';

const cases = CASES;
const SIGNUP_LIMIT = 3;

describe.each(cases)('throttles a client under the address the edge resolves, whatever X-Forwarded-For it sends (%s, %s)', (topology, mode) => {
  let env: SsoPlatform;
  beforeAll(async () => {
    env = await startSsoPlatform(mode, topology, { SIGNUP_RATE_LIMIT: `${SIGNUP_LIMIT}/600` });
    await env.adminToken();
  });
  afterAll(() => env.close());

  const signUp = (headers: Record<string, string> = {}, base = env.gateway) =>
    fetch(`${base}/api/v1/identity`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ name: 'Probe', email: `probe-${randomUUID()}@example.com` }),
    });

  it('answers 429 problem+json with Retry-After and RateLimit headers past SIGNUP_RATE_LIMIT, spoofed X-Forwarded-For ignored', async () => {
    // Every spoofed address counts against the one real peer, so the limit is reached within SIGNUP_LIMIT sign-ups.
    let remaining = SIGNUP_LIMIT;
    for (let i = 0; i < SIGNUP_LIMIT && remaining > 0; i++) {
      const response = await signUp({ 'x-forwarded-for': `198.51.100.${i + 1}` });
      expect(response.status).toBe(201);
      expect(response.headers.get('ratelimit-limit')).toBe(String(SIGNUP_LIMIT));
      expect(response.headers.get('ratelimit-policy')).toBe(`"signup";q=${SIGNUP_LIMIT};w=600`);
      const next = Number(response.headers.get('ratelimit-remaining'));
      expect(response.headers.get('ratelimit')).toMatch(new RegExp(`^"signup";r=${next};t=\\d+$`));
      expect(next).toBeLessThan(remaining);
      remaining = next;
    }
    const refused = await signUp({ 'x-forwarded-for': '198.51.100.200', 'accept-language': 'pt-BR' });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(500);
    expect(retryAfter).toBeLessThanOrEqual(600);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(refused.headers.get('ratelimit-reset'))).toBe(retryAfter);
    expect(refused.headers.get('ratelimit')).toBe(`"signup";r=0;t=${retryAfter}`);
    const body = (await refused.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 429, code: 'IDENTITY_SIGNUP_RATE_LIMITED', title: 'Requisições em excesso' });
    expect(String(body.detail)).toContain(`${retryAfter} segundos`);
  });

  it('blocks guessing one password from one address, whatever X-Forwarded-For each guess claims', async () => {
    const username = `victim-${randomUUID()}@example.com`;
    for (let i = 0; i < PAIR_LIMIT; i++) {
      const reply = await env.token({ grant_type: 'password', username, password: `guess-${i}` }, { 'x-forwarded-for': `203.0.113.${i + 1}` });
      expect(reply.status).toBe(400);
    }
    const blocked = await env.token({ grant_type: 'password', username, password: 'guess-last' }, { 'x-forwarded-for': '203.0.113.99' });
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  if (topology !== 'all-in-one') {
    it('a service behind the gateway believes the address the gateway forwards (its TRUST_PROXY names the gateway)', async () => {
      // Reached directly from loopback, which the services trust as the gateway here: each
      // forwarded address is a client of its own, so none of these is over the limit.
      for (let i = 0; i < SIGNUP_LIMIT + 1; i++) {
        const response = await signUp({ 'x-forwarded-for': `192.0.2.${i + 1}` }, env.direct('identity'));
        expect(response.status).toBe(201);
      }
    });
  }
});

// Needs a Redis to cut: runs with the real servers (REDIS_URL), through a TCP proxy this test owns.
const withRedis = describeIf(testModes().includes('real'), NEEDS_REAL_SERVERS);

withRedis('login throttling while Redis is unreachable (real)', () => {
  const mode = 'real' as const;
  let env: SsoPlatform;
  let redis: Awaited<ReturnType<typeof startTcpProxy>>;
  beforeAll(async () => {
    const target = new URL(process.env.REDIS_URL!);
    redis = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    env = await startSsoPlatform(mode, 'all-in-one', { REDIS_URL: `redis://127.0.0.1:${redis.port}` });
    await env.adminToken();
  });
  afterAll(async () => {
    await env.close();
    await redis.stop();
  });

  it('falls back to counting in process: the guess past the pair limit is refused, then sign-in resumes elsewhere', async () => {
    await redis.stop();
    const username = `victim-${randomUUID()}@example.com`;
    const statuses: number[] = [];
    for (let i = 0; i < PAIR_LIMIT + 3; i++) {
      statuses.push((await env.token({ grant_type: 'password', username, password: `guess-${i}` })).status);
    }
    expect(statuses).toEqual([...Array(PAIR_LIMIT).fill(400), 429, 429, 429]);
    await redis.start();
  });
});
