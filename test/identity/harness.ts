import { randomUUID } from 'node:crypto';
import { startPlatform } from '@app/all-in-one';
import { credentialsService } from '@app/credentials';
import { identityService } from '@app/identity';
import { buildServiceApp, createLogger, listenApp, type BusMessage, type Logger, type RunningApp } from '@app/platform';
import { answerRevocationsAsSso, SETTLE_BUDGET_MS, startTokenIssuer, type TestMode, type TokenIssuer } from '@app/testing';
import { startReplicas, topologyCases, type TestDependencies } from '../support/replicas.js';
import { openPlatformDependencies } from '../support/platform.js';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- assertions read any shape
}

/**
 * How the services run: `all-in-one`, the one instance on port 0 (its own edge) with identity
 * and credentials each also alone beside it, as split mode runs them, in this test process;
 * `replicas` (real servers only), every service as two processes of its own behind the
 * gateway, as `npm run start:split -- --replicas 2` runs them.
 */
export type Topology = 'all-in-one' | 'replicas';

/** Each topology in each mode the suites run in. */
export const CASES = topologyCases(['all-in-one'] as const);

/**
 * The identity and credentials services in `topology`, all on one database, their verifiers
 * trusting the test's own token issuer. Every response body, log line and event is kept so a
 * suite can prove no secret leaked.
 */
export interface Harness {
  topology: Topology;
  /** The public address: the all-in-one, or the gateway in front of the replicas. */
  edge: string;
  /**
   * Base URLs of identity and credentials running alone, as split mode runs them (where their
   * internal routes are served, and credentials asks identity over HTTP): apps of their own
   * beside the all-in-one, or the first replica of each.
   */
  standalone: { identity: string; credentials: string };
  issuer: TokenIssuer;
  deps: TestDependencies;
  /** The logger of the apps this test process runs (a suite's own extra replicas use it too); its lines are in `logs`. */
  logger: Logger;
  /** Every log line: this process's apps', and the replicas' output. */
  logs: string[];
  bodies: string[];
  events: BusMessage[];
  /** A request to the edge (or to `base`, e.g. a standalone service for internal routes). */
  call(method: string, path: string, options?: { token?: string; body?: unknown; headers?: Record<string, string>; base?: string }): Promise<Reply>;
  /** Waits for an event matching `match` (events arrive asynchronously, through the outbox). */
  event(match: (message: BusMessage) => boolean, timeoutMs?: number): Promise<BusMessage>;
  close(): Promise<void>;
}

/** The all-in-one and, beside it, split mode's identity and credentials, in this process. */
async function startInProcess(deps: TestDependencies, logger: Logger): Promise<{ edge: string; standalone: Harness['standalone']; close(): Promise<void> }> {
  const shared = { ...deps, logger };
  const platform = await startPlatform(deps.config, logger, { dependencies: shared, port: 0 });
  const running: RunningApp[] = [];
  const close = async () => {
    for (const app of running.reverse()) await app.close();
    await platform.close();
  };
  try {
    // Split mode beside it, like more replicas on the same database: credentials reaches identity over HTTP.
    const listen = { host: '127.0.0.1', port: 0 };
    const identity = await listenApp('identity', await buildServiceApp(identityService, shared), listen);
    running.push(identity);
    const credentials = await listenApp(
      'credentials',
      await buildServiceApp(credentialsService, { ...shared, config: { ...deps.config, IDENTITY_URL: identity.url } }),
      listen,
    );
    running.push(credentials);
    return { edge: platform.url, standalone: { identity: identity.url, credentials: credentials.url }, close };
  } catch (error) {
    await close();
    throw error;
  }
}

export async function startHarness(mode: TestMode, topology: Topology = 'all-in-one'): Promise<Harness> {
  const issuer = await startTokenIssuer();
  // The same settings in process and (replicas) in every process's environment.
  const platformEnv = { JWKS_URL: issuer.jwksUrl, PLATFORM_SERVICES: 'identity,credentials' };
  const deps = await openPlatformDependencies(mode, platformEnv);
  // No sso here: the test answers for its revocations (none), in process and on the run's stream.
  await answerRevocationsAsSso(deps.bus);
  const logs: string[] = [];
  // Debug level: the scan for leaked secrets should see everything the services would say.
  const logger = createLogger({ LOG_LEVEL: 'debug' }, { write: (line: string) => void logs.push(line) });
  let running: { edge: string; standalone: Harness['standalone']; close(): Promise<void> };
  try {
    if (topology === 'replicas') {
      const cluster = await startReplicas(deps, { env: { ...platformEnv, LOG_LEVEL: 'debug' }, output: (_name, line) => void logs.push(`${line}\n`) });
      running = {
        edge: cluster.url,
        standalone: { identity: cluster.replicas.identity[0]!, credentials: cluster.replicas.credentials[0]! },
        close: async () => {
          if (!(await cluster.stop())) throw new Error(`a replica did not exit 0 on SIGTERM; the last lines:\n${logs.slice(-20).join('')}`);
        },
      };
    } else {
      running = await startInProcess(deps, logger);
    }
  } catch (error) {
    await deps.dispose();
    await issuer.close();
    throw error;
  }
  const events: BusMessage[] = [];
  const subscriptions = await Promise.all(
    ['identity.>', 'credential.>'].map((pattern) =>
      deps.bus.subscribe(pattern, async (message) => void events.push(message), { group: `test-${randomUUID()}` }),
    ),
  );
  const bodies: string[] = [];
  return {
    topology,
    edge: running.edge,
    standalone: running.standalone,
    issuer,
    deps,
    logger,
    logs,
    bodies,
    events,
    call: async (method, path, options = {}) => {
      const headers: Record<string, string> = { ...options.headers };
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(new URL(path, options.base ?? running.edge), {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
      const text = await response.text();
      bodies.push(text);
      return { status: response.status, headers: response.headers, text, body: text ? JSON.parse(text) : undefined };
    },
    event: async (match, timeoutMs = SETTLE_BUDGET_MS) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = events.find(match);
        if (found) return found;
        if (Date.now() > deadline) throw new Error('the expected event was not published');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: async () => {
      try {
        await Promise.all(subscriptions.map((subscription) => subscription.unsubscribe()));
        await running.close();
      } finally {
        // Even after a replica that would not stop cleanly: the run's database and stream go.
        await deps.dispose();
        await issuer.close();
      }
    },
  };
}
