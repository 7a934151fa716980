import { createPublicKey, verify as verifySignature } from 'node:crypto';
import { startService, type Env, type RunningService } from '@app/platform';
import { freePort, openTestDependencies, startDirectoryDouble, type DirectoryDouble, type TestMode } from '@app/testing';
import { createSsoService } from '../src/index.js';

export interface SsoUnderTest {
  url: string;
  service: RunningService;
  double: DirectoryDouble;
  deps: Awaited<ReturnType<typeof openTestDependencies>>;
  announced: string[];
  /** POSTs a form to the token endpoint. */
  token(params: Record<string, string>, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

/**
 * sso listening on a free port over real dependencies of `mode`, with identity and
 * credentials played by a contract double that checks sso's own system tokens.
 */
export async function startSso(mode: TestMode, env: Env = {}): Promise<SsoUnderTest> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const double = await startDirectoryDouble({ jwksUrl: `${url}/api/v1/sso/jwks`, issuer: 'http://localhost:3000', audience: 'api-platform' });
  const deps = await openTestDependencies(mode, { IDENTITY_URL: double.url, CREDENTIALS_URL: double.url, SSO_URL: url, ...env });
  const announced: string[] = [];
  const service = await startService(createSsoService({ announce: (message) => announced.push(message) }), deps, { host: '127.0.0.1', port });
  return {
    url,
    service,
    double,
    deps,
    announced,
    token: async (params, headers = {}) => {
      const response = await fetch(`${url}/api/v1/sso/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(params).toString(),
      });
      return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
    },
    close: async () => {
      await service.close();
      await double.close();
      await deps.dispose();
    },
  };
}

/**
 * Checks an ES256 JWT against a JWKS with node:crypto alone (not jose): the key named by
 * `kid`, the raw r||s signature (IEEE P1363). Returns the payload, or throws.
 */
export function verifyIndependently(token: string, jwks: { keys: Record<string, unknown>[] }): Record<string, unknown> {
  const [headerPart, payloadPart, signaturePart] = token.split('.');
  if (!headerPart || !payloadPart || signaturePart === undefined) throw new Error('not a compact JWS');
  const header = JSON.parse(Buffer.from(headerPart, 'base64url').toString('utf8')) as { alg: string; kid: string };
  if (header.alg !== 'ES256') throw new Error(`unexpected alg ${header.alg}`);
  const jwk = jwks.keys.find((key) => key.kid === header.kid);
  if (!jwk) throw new Error(`no key ${header.kid} in the JWKS`);
  const key = createPublicKey({ key: jwk as never, format: 'jwk' });
  const valid = verifySignature('sha256', Buffer.from(`${headerPart}.${payloadPart}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signaturePart, 'base64url'));
  if (!valid) throw new Error('signature does not verify');
  return JSON.parse(Buffer.from(payloadPart, 'base64url').toString('utf8')) as Record<string, unknown>;
}

export const PASSWORD = 'correct horse battery staple';
