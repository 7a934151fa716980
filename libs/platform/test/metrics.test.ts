import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createApp, createLogger, declareAuth, loadConfig, openManagementPort, startManagementServer, type App, type ManagementServer } from '@app/platform';

const logger = createLogger({ LOG_LEVEL: 'silent' });

async function metricsApp(metrics: boolean): Promise<App> {
  const app = await createApp({
    name: 'shop',
    version: '1.0.0',
    logger,
    bodyLimit: 4096,
    auth: { verifier: { verify: () => Promise.reject(new Error('no tokens here')) }, edge: true },
    metrics,
  });
  await app.register(async (scope) => {
    declareAuth(scope as App, 'public');
    scope.get('/api/v1/:domain/ping', async (request) => ({ pong: (request.params as { domain: string }).domain }));
  });
  await app.ready();
  return app;
}

/** The value of one sample line of the exposition, e.g. `x_count{a="b"} 3`. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('/metrics with METRICS=on', () => {
  let app: App;
  let management: ManagementServer;
  /** A scrape of the management port, as Prometheus makes it: `inject`'s shape, so the checks below read the same. */
  const scrape = async () => {
    const response = await fetch(`${management.url}/metrics`);
    return { statusCode: response.status, headers: Object.fromEntries(response.headers), body: await response.text() };
  };
  beforeAll(async () => {
    app = await metricsApp(true);
    management = await startManagementServer({ host: '127.0.0.1', port: 0, logger });
  });
  afterAll(async () => {
    await app.close();
    await management.close();
  });

  it('is served on the management port without a token, in the Prometheus text format', async () => {
    const response = await scrape();
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(response.body).toContain('# TYPE http_request_duration_seconds histogram');
    expect(response.body).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(response.body).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
  });

  it('is not a route of the public app: at the edge it wants a token like any path off the allowlist', async () => {
    const response = await app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(401);
    expect(response.body).not.toContain('# TYPE');
    expect(app.hasRoute({ method: 'GET', url: '/metrics' })).toBe(false);
  });

  it('answers nothing else on the management port', async () => {
    for (const [method, path] of [['GET', '/'], ['GET', '/health/readiness'], ['POST', '/metrics'], ['GET', '/metrics/x']]) {
      const response = await fetch(`${management.url}${path}`, { method });
      expect([method, path, response.status]).toEqual([method, path, 404]);
    }
  });

  it('times each request under its route template, never its raw path', async () => {
    const before = (await scrape()).body;
    const series = 'http_request_duration_seconds_count{method="GET",route="/api/v1/:domain/ping",status_code="200"}';
    for (const domain of ['apples', 'pears', 'plums']) expect((await app.inject({ method: 'GET', url: `/api/v1/${domain}/ping` })).statusCode).toBe(200);
    const after = (await scrape()).body;
    expect(sample(after, series)! - (sample(before, series) ?? 0)).toBe(3);
    expect(after).not.toMatch(/apples|pears|plums/);
  });

  it('gives each series cumulative buckets up to +Inf, which equals its count, and its sum', async () => {
    for (let i = 0; i < 4; i++) await app.inject({ method: 'GET', url: '/api/v1/figs/ping' });
    const text = (await scrape()).body;
    const labels = 'method="GET",route="/api/v1/:domain/ping",status_code="200"';
    const bounds = ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf'];
    const buckets = bounds.map((le) => sample(text, `http_request_duration_seconds_bucket{le="${le}",${labels}}`));
    const count = sample(text, `http_request_duration_seconds_count{${labels}}`)!;
    expect(buckets.every((value) => value !== undefined)).toBe(true);
    expect(buckets.every((value, index) => index === 0 || value! >= buckets[index - 1]!)).toBe(true);
    expect(buckets.at(-1)).toBe(count);
    expect(count).toBeGreaterThanOrEqual(4);
    expect(sample(text, `http_request_duration_seconds_sum{${labels}}`)).toBeGreaterThan(0);
  });

  it('puts every request that matched no route under one label, whatever its path', async () => {
    const series = 'http_request_duration_seconds_count{method="GET",route="unmatched",status_code="401"}';
    const before = sample((await scrape()).body, series) ?? 0;
    for (const path of ['/nope', '/wp-admin.php', `/x/${'y'.repeat(50)}`]) expect((await app.inject({ method: 'GET', url: path })).statusCode).toBe(401);
    const after = (await scrape()).body;
    expect(sample(after, series)! - before).toBe(3);
    expect(after).not.toContain('wp-admin');
  });
});

describe('/metrics with METRICS=off', () => {
  let app: App;
  beforeAll(async () => {
    app = await metricsApp(false);
  });
  afterAll(() => app.close());

  it('opens no management port', async () => {
    expect(await openManagementPort(loadConfig({ METRICS: 'off', HOST: '127.0.0.1', MANAGEMENT_PORT: '0' }), logger)).toBeUndefined();
    expect(app.hasRoute({ method: 'GET', url: '/metrics' })).toBe(false);
  });

  it('is read from the environment as on or off, on by default', () => {
    expect(loadConfig({}).METRICS).toBe('on');
    expect(loadConfig({ METRICS: 'off' }).METRICS).toBe('off');
    expect(() => loadConfig({ METRICS: 'no' })).toThrow('METRICS: expected one of "on", "off", got "no"');
  });
});
