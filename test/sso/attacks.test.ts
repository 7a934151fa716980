import { createHmac, createPublicKey, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { claimsOf, startCountingServer, startSsoPlatform, CASES, type SsoPlatform } from './harness.js';

/** RFC 6750 §3.1: a token was sent and is bad; with no credentials at all, the challenge carries no error. */
const INVALID_TOKEN = 'Bearer realm="api-platform", error="invalid_token"';
const CHALLENGE = 'Bearer realm="api-platform"';

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

const cases = CASES;

describe.each(cases)('forged and broken tokens: 401 at the gateway and at each service reached directly (%s, %s)', (topology, mode) => {
  let env: SsoPlatform;
  let genuine: { kid: string; key: CryptoKey };
  let valid: string;
  let adminId: string;
  let attacker: { privateKey: CryptoKey; publicKey: CryptoKey };
  let trap: Awaited<ReturnType<typeof startCountingServer>>;

  beforeAll(async () => {
    env = await startSsoPlatform(mode, topology);
    trap = await startCountingServer(async () => ({ status: 200, body: '{"keys":[]}' }));
    attacker = await generateKeyPair('ES256', { extractable: true });
    // sso's own current key, read from its table, to sign tokens whose only fault is in their claims.
    genuine = await env.keys().signingKey();
    valid = await env.adminToken();
    adminId = String(claimsOf(valid).sub);
  });
  afterAll(async () => {
    await trap.close();
    await env.close();
  });

  /** A restricted route per target: the gateway, and in split mode sso itself and identity itself (the all-in-one has one port). */
  const targets = (): Record<string, string> => ({
    'gateway -> sso': `${env.gateway}/api/v1/sso/userinfo`,
    'gateway -> identity': `${env.gateway}/api/v1/identity/${adminId}`,
    ...(topology !== 'all-in-one'
      ? {
          'sso directly': `${env.direct('sso')}/api/v1/sso/userinfo`,
          'identity directly': `${env.direct('identity')}/api/v1/identity/${adminId}`,
        }
      : {}),
  });
  const statusesFor = async (token: string) =>
    Object.fromEntries(
      await Promise.all(
        Object.entries(targets()).map(async ([target, url]) => {
          const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
          const challenge = response.headers.get('www-authenticate');
          return [target, response.status === 401 && challenge !== INVALID_TOKEN ? `401 without challenge: ${challenge}` : response.status];
        }),
      ),
    );
  const everywhere = (status: number) => Object.fromEntries(Object.keys(targets()).map((target) => [target, status]));

  /** Claims a genuine admin token has; each attack changes one thing. */
  const claims = (): JWTPayload => ({
    iss: 'http://localhost:3000',
    aud: 'api-platform',
    sub: adminId,
    iat: Math.floor(Date.now() / 1000),
    exp: Math.floor(Date.now() / 1000) + 600,
    jti: randomUUID(),
    roles: ['admin'],
  });
  const signGenuine = (payload: JWTPayload) =>
    new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: genuine.kid, typ: 'JWT' }).sign(genuine.key);
  const signAttacker = (header: Record<string, unknown>, payload: JWTPayload = claims()) =>
    new SignJWT(payload).setProtectedHeader({ alg: 'ES256', ...header }).sign(attacker.privateKey);
  const unsigned = (alg: string) => `${b64({ alg, kid: genuine.kid, typ: 'JWT' })}.${b64(claims())}.`;
  const hs256 = (secret: string) => {
    const signingInput = `${b64({ alg: 'HS256', kid: genuine.kid, typ: 'JWT' })}.${b64(claims())}`;
    return `${signingInput}.${createHmac('sha256', secret).update(signingInput).digest('base64url')}`;
  };
  const publishedJwk = async () =>
    ((await (await fetch(`${env.gateway}/api/v1/sso/jwks`)).json()) as { keys: Record<string, unknown>[] }).keys.find((key) => key.kid === genuine.kid)!;

  it('accepts the genuine token, and a well-formed token signed with the genuine key, everywhere (so each attack can fail)', async () => {
    expect(await statusesFor(valid)).toEqual(everywhere(200));
    expect(await statusesFor(await signGenuine(claims()))).toEqual(everywhere(200));
  });

  const attacks: [string, () => Promise<string>][] = [
    ['alg none', async () => unsigned('none')],
    ['alg None', async () => unsigned('None')],
    ['alg NONE', async () => unsigned('NONE')],
    ['HS256 keyed with the published public key as PEM', async () =>
      hs256(createPublicKey({ key: (await publishedJwk()) as never, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string)],
    ['HS256 keyed with the published public key as JWK JSON', async () => hs256(JSON.stringify(await publishedJwk()))],
    ['a payload edited under the original signature', async () => {
      const [header, , signature] = valid.split('.');
      return `${header}.${b64({ ...claimsOf(valid), roles: ['admin', 'system'] })}.${signature}`;
    }],
    ['an empty signature', async () => `${valid.split('.').slice(0, 2).join('.')}.`],
    ['a foreign key under a known kid', () => signAttacker({ kid: genuine.kid })],
    ['an embedded jwk header', async () => signAttacker({ jwk: await exportJWK(attacker.publicKey) })],
    ['an embedded jwk header beside a known kid', async () => signAttacker({ kid: genuine.kid, jwk: await exportJWK(attacker.publicKey) })],
    ['a jku header', () => signAttacker({ kid: 'attacker-key', jku: `${trap.url}/jku` })],
    ['a jku header beside a known kid', () => signAttacker({ kid: genuine.kid, jku: `${trap.url}/jku` })],
    ['an x5u header', () => signAttacker({ kid: 'attacker-key', x5u: `${trap.url}/x5u` })],
    ['a kid with a path traversal', () => signAttacker({ kid: '../../../../../../etc/passwd' })],
    ['a kid with SQL', () => signAttacker({ kid: "' OR '1'='1'; --" })],
    ['a 10 KB kid', () => signAttacker({ kid: 'k'.repeat(10_240) })],
    ['no exp', () => {
      const { exp: _exp, ...rest } = claims();
      return signGenuine(rest);
    }],
    ['an expired token', () => signGenuine({ ...claims(), iat: Math.floor(Date.now() / 1000) - 7200, exp: Math.floor(Date.now() / 1000) - 3600 })],
    ['a wrong iss', () => signGenuine({ ...claims(), iss: 'https://evil.example' })],
    ['a wrong aud', () => signGenuine({ ...claims(), aud: 'another-api' })],
    ['nbf in the future', () => signGenuine({ ...claims(), nbf: Math.floor(Date.now() / 1000) + 3600 })],
    // The clock tolerance is 30 s: a token issued two minutes from now is forged or from a broken clock.
    ['iat in the future beyond the clock tolerance', () => signGenuine({ ...claims(), iat: Math.floor(Date.now() / 1000) + 120 })],
    ...(['iat', 'jti', 'sub'] as const).map((claim): [string, () => Promise<string>] => [
      `no ${claim}`,
      () => {
        const { [claim]: _dropped, ...rest } = claims();
        return signGenuine(rest);
      },
    ]),
  ];

  it.each(attacks)('refuses %s', async (_name, make) => {
    expect(await statusesFor(await make())).toEqual(everywhere(401));
  });

  it('challenges a request without credentials without an error code, everywhere', async () => {
    for (const headers of [{}, { authorization: 'Basic dXNlcjpwYXNz' }] as Record<string, string>[]) {
      const answers = await Promise.all(Object.values(targets()).map(async (url) => fetch(url, { headers })));
      expect(answers.map((response) => [response.status, response.headers.get('www-authenticate')])).toEqual(
        Object.keys(targets()).map(() => [401, CHALLENGE]),
      );
    }
  });

  it('never fetched a key from a URL a token named', () => {
    expect(trap.paths).toEqual([]);
  });

  it('lets a thousand unknown kids cost at most one JWKS fetch per verifier per cooldown', async () => {
    const tokens = await Promise.all(Array.from({ length: 1000 }, () => signAttacker({ kid: randomUUID() })));
    // The all-in-one's one verifier reads sso's key table in process: it never fetches the JWKS at all.
    const fetchesAllowed = topology !== 'all-in-one' ? 1 : 0;
    const bases = [`${env.gateway}/api/v1/identity/${adminId}`, ...(topology !== 'all-in-one' ? [`${env.direct('identity')}/api/v1/identity/${adminId}`] : [])];
    for (const base of bases) {
      const before = env.jwksFetches.length;
      for (let i = 0; i < tokens.length; i += 50) {
        const statuses = await Promise.all(
          tokens.slice(i, i + 50).map(async (token) => (await fetch(base, { headers: { authorization: `Bearer ${token}` } })).status),
        );
        expect(new Set(statuses)).toEqual(new Set([401]));
      }
      // Each batch runs well inside one 30 s cooldown.
      expect(env.jwksFetches.length - before).toBeLessThanOrEqual(fetchesAllowed);
    }
    // And the genuine token still works without another fetch.
    const before = env.jwksFetches.length;
    expect(await statusesFor(valid)).toEqual(everywhere(200));
    expect(env.jwksFetches.length).toBe(before);
  });
});
