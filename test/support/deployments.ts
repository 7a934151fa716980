// The platform as the end-to-end suites start it: the all-in-one, or split mode inside the test
// process (every service as its own app on its own port, the way `node
// services/<name>/dist/main.js` builds it, and the real gateway in front proxying to them and
// merging their OpenAPI documents). Split mode here needs no real servers, so the embedded
// suites run it too; `startSplit` (child processes) is the same apps started from their builds.
import { randomBytes, randomUUID } from 'node:crypto';
import { startPlatform } from '@app/all-in-one';
import { SERVICES, type ServiceName } from '@app/contracts';
import { credentialsService } from '@app/credentials';
import { crudService } from '@app/crud-service';
import { buildGateway } from '@app/gateway';
import { healthService } from '@app/health';
import { identityService } from '@app/identity';
import { buildServiceApp, listenApp, type Env, type RunningApp, type Service } from '@app/platform';
import { createSsoService } from '@app/sso';
import { freePort, readJson, SETTLE_BUDGET_MS, silentLogger, testModes, type TestMode } from '@app/testing';
import { openPlatformDependencies } from './platform.js';

const SPLIT_SERVICES: readonly [ServiceName, Service][] = [
  ['identity', identityService],
  ['credentials', credentialsService],
  ['sso', createSsoService({ announce: () => undefined })],
  ['crud', crudService],
  ['health', healthService],
];

export interface Running {
  /** The public address: the all-in-one, or the gateway. */
  url: string;
  close(): Promise<void>;
}

/** Every service alone on a free port, sharing `mode`'s dependencies, behind a gateway on another. */
export async function startInProcessSplit(mode: TestMode, env: Env = {}): Promise<Running> {
  const ports = await Promise.all(SPLIT_SERVICES.map(() => freePort()));
  const urls = Object.fromEntries(SPLIT_SERVICES.map(([name], i) => [SERVICES[name].urlVariable, `http://127.0.0.1:${ports[i]}`]));
  const deps = await openPlatformDependencies(mode, { ...urls, JWKS_URL: `${urls.SSO_URL}/api/v1/sso/jwks`, ...env });
  const running: RunningApp[] = [];
  const close = async () => {
    for (const app of running.reverse()) await app.close();
    await deps.dispose();
  };
  try {
    for (const [i, [name, service]] of SPLIT_SERVICES.entries()) {
      running.push(await listenApp(name, await buildServiceApp(service, deps), { host: '127.0.0.1', port: ports[i]! }));
    }
    const gateway = await listenApp('gateway', await buildGateway(deps.config, silentLogger()), { host: '127.0.0.1', port: 0 });
    running.push(gateway);
    return { url: gateway.url, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The all-in-one on `mode`'s dependencies, on a free port. */
export async function startAllInOne(mode: TestMode, env: Env = {}): Promise<Running> {
  const deps = await openPlatformDependencies(mode, env);
  const platform = await startPlatform(deps.config, silentLogger(), { port: 0, dependencies: deps });
  return {
    url: platform.url,
    close: async () => {
      await platform.close();
      await deps.dispose();
    },
  };
}

/** A first administrator of the suite's own: BOOTSTRAP_ADMIN_* for the platform's environment. */
export function bootstrapAdmin() {
  const admin = { email: `admin-${randomUUID()}@example.com`, password: randomBytes(18).toString('base64url') };
  return {
    ...admin,
    env: { BOOTSTRAP_ADMIN_EMAIL: admin.email, BOOTSTRAP_ADMIN_PASSWORD: admin.password },
    /** Its access token from the platform at `url`; sso creates it just after the platform answers, so this waits for it. */
    signIn: async (url: string): Promise<string> => {
      const deadline = Date.now() + SETTLE_BUDGET_MS;
      for (;;) {
        const response = await fetch(`${url}/api/v1/sso/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'password', username: admin.email, password: admin.password }),
        });
        if (response.ok) return String((await readJson(response)).access_token);
        if (Date.now() > deadline) throw new Error(`the bootstrap admin cannot sign in: ${response.status}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
  };
}

/** The all-in-one and split mode, in each mode the suites run in. */
export const DEPLOYMENTS = testModes().flatMap((mode) => [
  { name: `all-in-one, ${mode}`, mode, start: (env?: Env) => startAllInOne(mode, env) },
  { name: `split, ${mode}`, mode, start: (env?: Env) => startInProcessSplit(mode, env) },
]);
