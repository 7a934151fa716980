import { randomUUID } from 'node:crypto';
import { startPlatform, type Platform } from '@app/all-in-one';
import { createLogger, type BusMessage } from '@app/platform';
import { openTestDependencies, startTokenIssuer, type TestMode, type TokenIssuer } from '@app/testing';

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- assertions read any shape
}

/**
 * The identity and credentials services behind the real gateway (all-in-one, ports 0), with
 * every response body, log line and event kept so a suite can prove no secret leaked.
 */
export interface Harness {
  platform: Platform;
  issuer: TokenIssuer;
  deps: Awaited<ReturnType<typeof openTestDependencies>>;
  logs: string[];
  bodies: string[];
  events: BusMessage[];
  /** A request through the gateway (or to `base`, e.g. a service's own URL for internal routes). */
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
  const platform = await startPlatform(deps.config, logger, {
    dependencies: { ...deps, logger },
    ports: { gateway: 0, identity: 0, credentials: 0, health: 0 },
  });
  const events: BusMessage[] = [];
  const subscriptions = await Promise.all(
    ['identity.>', 'credential.>'].map((pattern) =>
      deps.bus.subscribe(pattern, async (message) => void events.push(message), { group: `test-${randomUUID()}` }),
    ),
  );
  const bodies: string[] = [];
  return {
    platform,
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
      await platform.close();
      await deps.dispose();
      await issuer.close();
    },
  };
}
