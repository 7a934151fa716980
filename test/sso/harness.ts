import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startPlatform, type PlatformConfig } from '@app/all-in-one';
import { credentialsService } from '@app/credentials';
import { buildGateway } from '@app/gateway';
import { identityService } from '@app/identity';
import { buildServiceApp, createNatsBus, listenApp, type App, type Bus, type Env, type RunningApp } from '@app/platform';
import { configuredKeyService, createSsoService } from '@app/sso';
import { freePort, type TestMode } from '@app/testing';
import { startReplicas, topologyCases, type TestDependencies } from '../support/replicas.js';
import { openPlatformDependencies } from '../support/platform.js';

export const ADMIN_EMAIL = 'admin@example.com';
export const ADMIN_PASSWORD = 'the bootstrap admin password';

/**
 * How the platform runs: `all-in-one`, every service in one Fastify instance whose verifiers
 * read sso's key table in process; `split`, the gateway and each service an app of its own
 * on its own port (as in split mode, in this one test process), calling each other over HTTP
 * and fetching sso's JWKS; `replicas` (real servers only), split mode as `npm run start:split
 * -- --replicas 2` runs it: every service as two processes of its own behind the gateway.
 */
export type Topology = 'all-in-one' | 'split' | 'replicas';
export const TOPOLOGIES: Topology[] = ['all-in-one', 'split'];

/** Each topology in each mode a suite runs in: `replicas` needs the real servers. */
export const CASES = topologyCases(TOPOLOGIES);

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
  topology: Topology;
  deps: TestDependencies;
  /** The edge: the gateway in split mode, the one instance in the all-in-one. */
  gateway: string;
  /** A service's own URL, to reach it directly (not through the gateway); split mode only. */
  direct(service: 'sso' | 'identity' | 'credentials'): string;
  /** A key service on sso's table, as another sso replica builds it (not the running sso's own). */
  keys(): ReturnType<typeof configuredKeyService>;
  /** Every JWKS fetch of every verifier (gateway, identity, credentials) goes through this relay. */
  jwksFetches: string[];
  /** POSTs a form to the token endpoint through the gateway. */
  token(params: Record<string, string>, headers?: Record<string, string>): Promise<TokenReply>;
  /** A JSON request through the gateway. */
  call(method: string, path: string, token?: string, body?: unknown): Promise<{ status: number; body: unknown; headers: Headers }>;
  /**
   * Another verifier started now, beside the running platform on the same cache and bus:
   * a gateway (in front of this platform's services) or a standalone identity service.
   * `natsServers` connects its bus elsewhere (real mode: through a test's TCP proxy).
   */
  startLate(what: 'gateway' | 'identity', options?: { natsServers?: string }): Promise<RunningApp>;
  /** Signs in as the bootstrap admin, waiting for sso to have created it. */
  adminToken(): Promise<string>;
  close(): Promise<void>;
}

/** identity, credentials and sso each as their own app, and the gateway in front: split mode in one process. */
async function startSplit(deps: TestDependencies, ssoPort: number): Promise<{ edge: RunningApp; services: Record<'sso' | 'identity' | 'credentials', RunningApp>; close(): Promise<void> }> {
  const started: RunningApp[] = [];
  const close = async () => {
    for (const running of started.reverse()) await running.close().catch(() => undefined);
  };
  const listen = async (name: string, app: App, port = 0) => {
    try {
      const running = await listenApp(name, app, { host: '127.0.0.1', port });
      started.push(running);
      return running;
    } catch (error) {
      await app.close();
      throw error;
    }
  };
  // Behind the gateway a service believes X-Forwarded-For from the gateway only (here loopback,
  // as a deployment names the gateway's network); the gateway keeps the edge's TRUST_PROXY.
  const configured = (urls: Partial<PlatformConfig>) => ({ ...deps, config: { ...deps.config, TRUST_PROXY: 'loopback', ...urls } });
  try {
    const identity = await listen('identity', await buildServiceApp(identityService, configured({})));
    const credentials = await listen('credentials', await buildServiceApp(credentialsService, configured({ IDENTITY_URL: identity.url })));
    const peers = { IDENTITY_URL: identity.url, CREDENTIALS_URL: credentials.url };
    const sso = await listen('sso', await buildServiceApp(createSsoService(), configured(peers)), ssoPort);
    const edge = await listen(
      'gateway',
      await buildGateway({ ...deps.config, ...peers, SSO_URL: sso.url }, deps.logger, { revocationBus: deps.bus }),
    );
    return { edge, services: { identity, credentials, sso }, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * The platform in `topology` with the real identity, credentials and sso behind the gateway;
 * the bootstrap admin configured; every verifier that fetches sso's JWKS pointed at it
 * through a counting relay.
 */
export async function startSsoPlatform(mode: TestMode, topology: Topology, env: Env = {}): Promise<SsoPlatform> {
  const ssoPort = await freePort();
  // sso's replicas (one in-process sso but with `replicas`): the relay asks the next when one is not up yet.
  let jwksOrigins = [`http://127.0.0.1:${ssoPort}`];
  const relay = await startCountingServer(async () => {
    for (const origin of jwksOrigins) {
      const response = await fetch(`${origin}/api/v1/sso/jwks`).catch(() => undefined);
      if (response) return { status: response.status, body: await response.text() };
    }
    return { status: 503, body: '' };
  });
  // What the platform is told, in process or (replicas) in every process's environment.
  const platformEnv: Env = {
    JWKS_URL: `${relay.url}/jwks`,
    BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN_PASSWORD,
    PLATFORM_SERVICES: 'identity,credentials,sso',
    ...env,
  };
  const deps = await openPlatformDependencies(mode, platformEnv);
  let running: {
    url: string;
    direct(service: 'sso' | 'identity' | 'credentials'): string;
    /** Where a late gateway sends each service's routes. */
    peers: Partial<PlatformConfig>;
    close(): Promise<void>;
  };
  try {
    if (topology === 'all-in-one') {
      // One port: sso's included, so the relay reaches its JWKS should any verifier ever fetch it.
      const platform = await startPlatform(deps.config, deps.logger, { dependencies: deps, port: ssoPort });
      running = {
        url: platform.url,
        direct: () => {
          throw new Error('the all-in-one has one port: no service is reached directly');
        },
        peers: { IDENTITY_URL: platform.url, CREDENTIALS_URL: platform.url, SSO_URL: platform.url, CRUD_URL: platform.url, HEALTH_URL: platform.url },
        close: () => platform.close(),
      };
    } else if (topology === 'replicas') {
      const cluster = await startReplicas(deps, {
        // The verifiers fetch sso's keys while the processes start (the bootstrap's system token).
        onPlanned: (replicas) => void (jwksOrigins = replicas.sso),
        env: platformEnv,
      });
      running = {
        url: cluster.url,
        direct: (service) => cluster.replicas[service][0]!,
        peers: { IDENTITY_URL: cluster.replicas.identity.join(','), CREDENTIALS_URL: cluster.replicas.credentials.join(','), SSO_URL: cluster.replicas.sso.join(',') },
        close: async () => {
          await cluster.stop();
        },
      };
    } else {
      const split = await startSplit(deps, ssoPort);
      running = {
        url: split.edge.url,
        direct: (service) => split.services[service].url,
        peers: { IDENTITY_URL: split.services.identity.url, CREDENTIALS_URL: split.services.credentials.url, SSO_URL: split.services.sso.url },
        close: split.close,
      };
    }
  } catch (error) {
    await relay.close();
    await deps.dispose();
    throw error;
  }
  const gateway = running.url;
  const late: { app: RunningApp; bus?: Bus }[] = [];
  const startLate: SsoPlatform['startLate'] = async (what, options = {}) => {
    const bus = options.natsServers
      ? await createNatsBus({ servers: options.natsServers, logger: deps.logger, stream: deps.natsStream, name: `late-${what}` })
      : undefined;
    const app =
      what === 'gateway'
        ? await buildGateway({ ...deps.config, ...running.peers }, deps.logger, { revocationBus: bus ?? deps.bus })
        : await buildServiceApp(identityService, { ...deps, bus: bus ?? deps.bus });
    const started = await listenApp(`late-${what}`, app, { host: '127.0.0.1', port: 0 });
    late.push({ app: started, bus });
    return started;
  };
  const token: SsoPlatform['token'] = async (params, headers = {}) => {
    const response = await fetch(`${gateway}/api/v1/sso/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(params).toString(),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
  };
  return {
    topology,
    deps,
    gateway,
    direct: running.direct,
    keys: () => configuredKeyService(deps.config, deps.database, deps.logger),
    jwksFetches: relay.paths,
    token,
    call: async (method, path, bearer, body) => {
      const response = await fetch(`${gateway}${path}`, {
        method,
        headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
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
    startLate,
    close: async () => {
      for (const { app, bus } of late) {
        await app.close().catch(() => undefined);
        await bus?.close().catch(() => undefined);
      }
      await running.close();
      await relay.close();
      await deps.dispose();
    },
  };
}

/** The claims of a compact JWS, unverified (the tests verify separately). */
export const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
