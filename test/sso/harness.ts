import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startPlatform, type Platform } from '@app/all-in-one';
import type { Env } from '@app/platform';
import { freePort, openTestDependencies, type TestMode } from '@app/testing';

export const ADMIN_EMAIL = 'admin@example.com';
export const ADMIN_PASSWORD = 'the bootstrap admin password';

/** An HTTP server that records the path of every request it gets and answers with `answer`. */
export async function startCountingServer(answer: () => Promise<{ status: number; body: string }>) {
  const paths: string[] = [];
  const server: Server = createServer((req, res) => {
    paths.push(req.url ?? '');
    void answer().then(({ status, body }) => {
      res.statusCode = status;
      res.setHeader('content-type', 'application/json');
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface TokenReply {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

export interface SsoPlatform {
  platform: Platform;
  deps: Awaited<ReturnType<typeof openTestDependencies>>;
  gateway: string;
  /** A service's own URL, to reach it directly (not through the gateway). */
  direct(service: 'sso' | 'identity' | 'credentials'): string;
  /** Every JWKS fetch of every verifier (gateway, identity, credentials) goes through this relay. */
  jwksFetches: string[];
  /** POSTs a form to the token endpoint through the gateway. */
  token(params: Record<string, string>, headers?: Record<string, string>): Promise<TokenReply>;
  /** A JSON request through the gateway. */
  call(method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: unknown }>;
  /** Signs in as the bootstrap admin, waiting for sso to have created it. */
  adminToken(): Promise<string>;
  close(): Promise<void>;
}

/**
 * The all-in-one platform with the real identity, credentials and sso behind the gateway;
 * the bootstrap admin configured; every verifier pointed at sso's JWKS through a counting relay.
 */
export async function startSsoPlatform(mode: TestMode, env: Env = {}): Promise<SsoPlatform> {
  const ssoPort = await freePort();
  const relay = await startCountingServer(async () => {
    const response = await fetch(`http://127.0.0.1:${ssoPort}/api/v1/sso/jwks`);
    return { status: response.status, body: await response.text() };
  });
  const deps = await openTestDependencies(mode, {
    JWKS_URL: `${relay.url}/jwks`,
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    PLATFORM_SERVICES: 'identity,credentials,sso',
    ...env,
  });
  const platform = await startPlatform(deps.config, deps.logger, {
    dependencies: deps,
    ports: { gateway: 0, identity: 0, credentials: 0, sso: ssoPort, crud: 0, health: 0 },
  });
  const gateway = platform.url;
  const token: SsoPlatform['token'] = async (params, headers = {}) => {
    const response = await fetch(`${gateway}/api/v1/sso/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(params).toString(),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
  };
  return {
    platform,
    deps,
    gateway,
    direct: (service) => platform.services[service]!.url,
    jwksFetches: relay.paths,
    token,
    call: async (method, path, bearer, body) => {
      const response = await fetch(`${gateway}${path}`, {
        method,
        headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    },
    adminToken: async () => {
      // The bootstrap runs once sso listens, beside the other services starting: poll briefly.
      for (let attempt = 0; attempt < 200; attempt++) {
        const reply = await token({ grant_type: 'password', username: ADMIN_EMAIL, password: ADMIN_PASSWORD });
        if (reply.status === 200) return String(reply.body.access_token);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error('the bootstrap admin never became able to sign in');
    },
    close: async () => {
      await platform.close();
      await relay.close();
      await deps.dispose();
    },
  };
}

/** The claims of a compact JWS, unverified (the tests verify separately). */
export const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
