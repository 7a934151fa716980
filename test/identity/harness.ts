import { randomUUID } from 'node:crypto';
import { startPlatform, type Platform } from '@app/all-in-one';
import { credentialsService } from '@app/credentials';
import { identityService } from '@app/identity';
import { buildServiceApp, createLogger, listenApp, type BusMessage, type RunningApp } from '@app/platform';
import { openTestDependencies, startTokenIssuer, type TestMode, type TokenIssuer } from '@app/testing';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- assertions read any shape
}

/**
 * The identity and credentials services in the all-in-one (one instance on port 0, its own
 * edge), and each also alone as in split mode (where their internal routes are served, and
 * credentials asks identity over HTTP), all on one database. Every response body, log line
 * and event is kept so a suite can prove no secret leaked.
 */
export interface Harness {
  platform: Platform;
  /** Base URLs of identity and credentials running alone, as split mode runs them. */
  standalone: { identity: string; credentials: string };
  issuer: TokenIssuer;
  deps: Awaited<ReturnType<typeof openTestDependencies>>;
  logs: string[];
  bodies: string[];
  events: BusMessage[];
  /** A request to the all-in-one (or to `base`, e.g. a standalone service for internal routes). */
  call(method: string, path: string, options?: { token?: string; body?: unknown; headers?: Record<string, string>; base?: string }): Promise<Reply>;
  /** Waits for an event matching `match` (events arrive asynchronously, through the outbox). */
  event(match: (message: BusMessage) => boolean, timeoutMs?: number): Promise<BusMessage>;
  close(): Promise<void>;
}

export async function startHarness(mode: TestMode): Promise<Harness> {
  const issuer = await startTokenIssuer();
  const deps = await openTestDependencies(mode, { JWKS_URL: issuer.jwksUrl, PLATFORM_SERVICES: 'identity,credentials' });
  const logs: string[] = [];
  // Debug level: the scan for leaked secrets should see everything the services would say.
  const logger = createLogger({ LOG_LEVEL: 'debug' }, { write: (line: string) => void logs.push(line) });
  const shared = { ...deps, logger };
  const platform = await startPlatform(deps.config, logger, { dependencies: shared, port: 0 });
  // Split mode beside it, like more replicas on the same database: credentials reaches identity over HTTP.
  const listen = { host: '127.0.0.1', port: 0 };
  const running: RunningApp[] = [];
  const identity = await listenApp('identity', await buildServiceApp(identityService, shared), listen);
  running.push(identity);
  const credentials = await listenApp(
    'credentials',
    await buildServiceApp(credentialsService, { ...shared, config: { ...deps.config, IDENTITY_URL: identity.url } }),
    listen,
  );
  running.push(credentials);
  const events: BusMessage[] = [];
  const subscriptions = await Promise.all(
    ['identity.>', 'credential.>'].map((pattern) =>
      deps.bus.subscribe(pattern, async (message) => void events.push(message), { group: `test-${randomUUID()}` }),
    ),
  );
  const bodies: string[] = [];
  return {
    platform,
    standalone: { identity: identity.url, credentials: credentials.url },
    issuer,
    deps,
    logs,
    bodies,
    events,
    call: async (method, path, options = {}) => {
      const headers: Record<string, string> = { ...options.headers };
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(new URL(path, options.base ?? platform.url), {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
      const text = await response.text();
      bodies.push(text);
      return { status: response.status, headers: response.headers, text, body: text ? JSON.parse(text) : undefined };
    },
    event: async (match, timeoutMs = 5_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = events.find(match);
        if (found) return found;
        if (Date.now() > deadline) throw new Error('the expected event was not published');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: async () => {
      await Promise.all(subscriptions.map((subscription) => subscription.unsubscribe()));
      for (const app of running.reverse()) await app.close();
      await platform.close();
      await deps.dispose();
      await issuer.close();
    },
  };
}
