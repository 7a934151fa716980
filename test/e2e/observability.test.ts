// /metrics and CORS as a client and Prometheus see them: the all-in-one (embedded, and on the
// real servers when they are named) and split mode (real servers only). CORS through the public
// address; /metrics only on each process's management port (MANAGEMENT_PORT), never on a public
// one. The Grafana dashboard under deploy/ is held to what is scraped.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parser } from '@prometheus-io/lezer-promql';
import { startPlatform } from '@app/all-in-one';
import { startSplit } from '@app/split';
import { CORS_EXPOSED, corsHeadersOf, corsPreflightAllowance, createTestDatabase, eventually, readJson, REAL, SETTLE_BUDGET_MS, silentLogger, testModes } from '@app/testing';
import { openPlatformDependencies } from '../support/platform.js';
import { CLUSTER_ENV } from '../support/replicas.js';

interface Running {
  url: string;
  /** Each split-mode service's own address (none in the all-in-one). */
  services: string[];
  /** Every process's management address, where /metrics is. */
  management: string[];
  close(): Promise<void>;
}

const ALLOWED = 'https://app.example.com';
const admin = { email: `admin-${randomUUID()}@example.com`, password: randomBytes(18).toString('base64url') };
const ENV = { BOOTSTRAP_ADMIN_EMAIL: admin.email, BOOTSTRAP_ADMIN_PASSWORD: admin.password, CORS_ORIGINS: `${ALLOWED},http://localhost:5173` };
const PREFLIGHT = { 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' };

const targets: { name: string; start(): Promise<Running> }[] = [
  ...testModes().map((mode) => ({
    name: `all-in-one, ${mode}`,
    start: async (): Promise<Running> => {
      const deps = await openPlatformDependencies(mode, ENV);
      const platform = await startPlatform(deps.config, silentLogger(), { port: 0, dependencies: deps });
      return {
        url: platform.url,
        services: [],
        management: [platform.managementUrl!],
        close: async () => {
          await platform.close();
          await deps.dispose();
        },
      };
    },
  })),
  ...(REAL.databaseUrl && REAL.redisUrl && REAL.natsUrl
    ? [
        {
          name: 'split',
          start: async (): Promise<Running> => {
            const db = await createTestDatabase(REAL.databaseUrl!);
            const cluster = await startSplit({
              replicas: 1,
              port: 0,
              output: () => undefined,
              env: { PATH: process.env.PATH, DATABASE_URL: db.url, REDIS_URL: REAL.redisUrl, NATS_URL: REAL.natsUrl, LOG_LEVEL: 'warn', ...CLUSTER_ENV, CACHE_KEY_PREFIX: `observability:${randomUUID().slice(0, 8)}:`, ...ENV },
            }).catch(async (error: unknown) => {
              await db.drop();
              throw error;
            });
            return {
              url: cluster.url,
              services: Object.values(cluster.replicas).flat(),
              management: cluster.processes.map((member) => member.managementUrl),
              close: async () => {
                await cluster.stop();
                await db.drop();
              },
            };
          },
        },
      ]
    : []),
];

/** The metric families a scrape declares (`# TYPE name kind`), with the series names each kind adds. */
function exposedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, kind] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (kind === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
    if (kind === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

/** Grafana's variables in an expression, replaced by what they expand to, so it parses as PromQL. */
const expandVariables = (expr: string) => expr.replaceAll('$__rate_interval', '5m').replaceAll('$job', '.*');

/** The metric names a PromQL expression selects; throws on a syntax error. */
function metricNamesOf(expr: string): string[] {
  const tree = parser.parse(expr);
  const names: string[] = [];
  const cursor = tree.cursor();
  do {
    if (cursor.type.isError) throw new Error(`not PromQL at ${cursor.from}: ${expr}`);
    if (cursor.name === 'Identifier' && cursor.node.parent?.name === 'VectorSelector') names.push(expr.slice(cursor.from, cursor.to));
  } while (cursor.next());
  return names;
}

interface Dashboard {
  panels: { title: string; targets: { expr: string }[] }[];
  templating: { list: { name: string; query?: string | { query: string } }[] };
}
const dashboard = JSON.parse(readFileSync(fileURLToPath(new URL('../../deploy/grafana/platform.json', import.meta.url)), 'utf8')) as Dashboard;
const dashboardExpressions = dashboard.panels.flatMap((panel) => panel.targets.map((target) => ({ panel: panel.title, expr: expandVariables(target.expr) })));

describe('the Grafana dashboard', () => {
  it.each(dashboardExpressions)('has PromQL that parses in "$panel"', ({ expr }) => {
    expect(metricNamesOf(expr).length).toBeGreaterThan(0);
  });

  it('does not parse what is not PromQL (the check can fail)', () => {
    expect(() => metricNamesOf('sum by (route (rate(x[5m]))')).toThrow('not PromQL');
  });
});

describe.each(targets)('metrics and CORS through the public address ($name)', (target) => {
  let running: Running;
  beforeAll(async () => {
    running = await target.start();
  });
  afterAll(async () => {
    await running?.close();
  });

  it('answers a preflight to a protected route, which carries no token, 204 with the allowance', async () => {
    const response = await fetch(`${running.url}/api/v1/identity/me`, { method: 'OPTIONS', headers: { origin: ALLOWED, ...PREFLIGHT } });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe('');
    expect(corsHeadersOf(response.headers)).toEqual(corsPreflightAllowance(ALLOWED));
  });

  it('gives a preflight from an origin not listed a 404 and no CORS header', async () => {
    const response = await fetch(`${running.url}/api/v1/products`, { method: 'OPTIONS', headers: { origin: 'https://evil.example.net', ...PREFLIGHT } });
    expect(response.status).toBe(404);
    expect(corsHeadersOf(response.headers)).toEqual({});
  });

  it('lets a listed origin read an actual answer, once allowed, and its 401 without a token', async () => {
    const ping = await fetch(`${running.url}/api/v1/products/ping`, { headers: { origin: 'http://localhost:5173' } });
    expect(ping.status).toBe(200);
    expect(corsHeadersOf(ping.headers)).toEqual({ 'access-control-allow-origin': 'http://localhost:5173', 'access-control-expose-headers': CORS_EXPOSED });
    const denied = await fetch(`${running.url}/api/v1/products`, { headers: { origin: ALLOWED } });
    expect(denied.status).toBe(401);
    expect(corsHeadersOf(denied.headers)).toEqual({ 'access-control-allow-origin': ALLOWED, 'access-control-expose-headers': CORS_EXPOSED });
    expect(denied.headers.get('vary')).toBe('Origin, Accept-Language');
  });

  it('serves no /metrics on a public port: the edge asks for a token, a service has no such route', async () => {
    for (const url of [running.url, ...running.services]) {
      const response = await fetch(`${url}/metrics`);
      expect([url, response.status]).toEqual([url, url === running.url ? 401 : 404]);
      expect(await response.text()).not.toMatch(/^# TYPE /m);
    }
  });

  it('exposes every metric the dashboard queries on each process\'s management port, without a token', async () => {
    // Traffic for every family: a sign-in (sso), a list read twice (crud cache), a failed sign-in.
    // The bootstrap admin is created in the background after start: ask until it exists.
    let token: Response | undefined;
    const signedIn = await eventually(async () => {
      token = await fetch(`${running.url}/api/v1/sso/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'password', username: admin.email, password: admin.password }),
      });
      return token.status === 200;
    }, SETTLE_BUDGET_MS, 250);
    expect(signedIn).toBe(true);
    const { access_token: accessToken } = await readJson(token!);
    for (let read = 0; read < 2; read += 1) expect((await fetch(`${running.url}/api/v1/products`, { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(200);
    const failed = await fetch(`${running.url}/api/v1/sso/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', username: admin.email, password: 'not-the-password' }),
    });
    expect(failed.status).toBe(400);

    const scrapes = await Promise.all(running.management.map(async (url) => {
      const response = await fetch(`${url}/metrics`);
      expect([url, response.status]).toEqual([url, 200]);
      return response.text();
    }));
    const exposed = new Set(scrapes.flatMap((text) => [...exposedNames(text)]));
    const named = new Set(dashboardExpressions.flatMap(({ expr }) => metricNamesOf(expr)));
    for (const variable of dashboard.templating.list) {
      const query = typeof variable.query === 'object' ? variable.query.query : variable.query;
      const metric = query && /^label_values\((\w+),/.exec(query)?.[1];
      if (metric) named.add(metric);
    }
    expect([...named].filter((name) => !exposed.has(name))).toEqual([]);
    const all = scrapes.join('\n');
    expect(all).toMatch(/^sso_tokens_issued_total\{grant_type="password"\} [1-9]\d*$/m);
    expect(all).toMatch(/^sso_failed_logins_total\{grant_type="password"\} [1-9]\d*$/m);
    expect(all).toMatch(/^crud_cache_lookups_total\{domain="product",result="hit"\} [1-9]\d*$/m);
    expect(all).toMatch(/^outbox_backlog_events\{service="identity"\} \d+$/m);
  });
});
