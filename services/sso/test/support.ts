import { buildServiceApp, listenApp, type Env, type RunningApp } from '@app/platform';
import { freePort, openTestDependencies, startDirectoryDouble, type DirectoryDouble, type TestMode } from '@app/testing';
import { configuredKeyService, createSsoService, ssoConfig } from '../src/index.js';

/** Test dependencies whose config holds sso's variables beside the shared ones. */
export const openSsoDependencies = (mode: TestMode, env: Env = {}) => openTestDependencies(mode, env, [ssoConfig]);

export type SsoDependencies = Awaited<ReturnType<typeof openSsoDependencies>>;

export interface SsoUnderTest {
  url: string;
  service: RunningApp;
  double: DirectoryDouble;
  deps: SsoDependencies;
  announced: string[];
  /** A key service on sso's database, as another sso replica builds it (another process, to the running sso). */
  keys(): ReturnType<typeof configuredKeyService>;
  /** POSTs a form to the token endpoint. */
  token(params: Record<string, string>, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

/** sso alone (split mode), listening: it must, since the double verifies sso's system tokens against its JWKS. */
export async function listenSso(deps: SsoDependencies, port: number, announce?: (message: string) => void): Promise<RunningApp> {
  const app = await buildServiceApp(createSsoService({ announce }), deps);
  try {
    return await listenApp('sso', app, { host: '127.0.0.1', port });
  } catch (error) {
    await app.close();
    throw error;
  }
}

/**
 * sso listening on a free port over real dependencies of `mode`, with identity and
 * credentials played by a contract double that checks sso's own system tokens.
 */
export async function startSso(mode: TestMode, env: Env = {}): Promise<SsoUnderTest> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const double = await startDirectoryDouble({ jwksUrl: `${url}/api/v1/sso/jwks`, issuer: 'http://localhost:3000', audience: 'api-platform' });
  const deps = await openSsoDependencies(mode, { IDENTITY_URL: double.url, CREDENTIALS_URL: double.url, SSO_URL: url, ...env });
  const announced: string[] = [];
  const service = await listenSso(deps, port, (message) => announced.push(message));
  return {
    url,
    service,
    double,
    deps,
    announced,
    keys: () => configuredKeyService(deps.config, deps.database, deps.logger),
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

export { verifyIndependently } from '@app/testing';

export const PASSWORD = 'correct horse battery staple';
