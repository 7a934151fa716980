import { afterAll, beforeAll, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { AppError, createApp, createLogger, declareAuth, type App } from '@app/platform';
import { pino } from 'pino';
import { z } from 'zod';

// Distinctive values, so a search of the raw output cannot miss them or match by chance.
const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.tok3n-Qz8Vw2Lk.s1gnature-Pm4Xr7';
const COOKIE_VALUE = 'c00kie-Vq2Lm8Zt5Hd3';
const PASSWORD = 'pa55word-Hx7Rt3Kb9';
const SECRET = 'secr3t-Ny4Wd1Fg6';
const NEVER_LOGGED = [TOKEN, COOKIE_VALUE, PASSWORD, SECRET];

const PROBES = ['/health/liveness', '/health/readiness', '/api/v1/health/liveness', '/api/v1/health/readiness'];

/** Headers a real client sends with every request: a bearer token and a session cookie. */
const credentials = { authorization: `Bearer ${TOKEN}`, cookie: `sid=${COOKIE_VALUE}; theme=dark` };

interface Line {
  level: number;
  reqId?: string;
  service?: string;
  method?: string;
  route?: string;
  path?: string;
  status?: number;
  ms?: number;
  code?: string;
  err?: Record<string, unknown>;
  msg: string;
}

async function buildApp(output: string[], options: { pretty?: boolean } = {}): Promise<App> {
  const logger = createLogger({ LOG_LEVEL: 'info' }, { write: (line: string) => void output.push(line) }, options);
  const app = await createApp({ name: 'shop', version: '1.0.0', logger, bodyLimit: 4096 });
  // What is logged is the point here, not who may call: every route is open.
  declareAuth(app, 'public');
  return app;
}

function addRoutes(app: App): void {
  const signUp = z.strictObject({ email: z.email(), password: z.string().min(8), secret: z.string() });
  app.post('/api/v1/accounts', { schema: { body: signUp } }, async (request, reply) => reply.code(201).send({ email: request.body.email }));
  app.get('/api/v1/products/:id', { schema: { params: z.object({ id: z.string() }) } }, async (request) => ({ id: request.params.id }));
  app.delete('/api/v1/products/:id', async () => {
    throw new AppError('SHOP_PRODUCT_LOCKED', 409, 'error.internal');
  });
  app.post('/api/v1/orders', async () => {
    // What a database driver's error looks like (an internal error, not an outage, which is a
    // 503): the message is the operator's clue, the
    // extra properties quote the statement's values.
    throw Object.assign(new Error('insert into "order" failed: could not extend file'), {
      code: 'XX000',
      detail: `Key (password)=(${PASSWORD}) already exists.`,
      parameters: [PASSWORD, SECRET],
      request: { headers: credentials },
    });
  });
  for (const probe of PROBES) app.get(probe, async () => ({ status: 'active' }));
}

describe('the request log', () => {
  const output: string[] = [];
  let app: App;

  beforeAll(async () => {
    app = await buildApp(output);
    addRoutes(app);
    await app.ready();
  });
  afterAll(() => app.close());
  beforeEach(() => {
    output.length = 0;
  });

  const lines = (): Line[] => output.map((line) => JSON.parse(line) as Line);

  it('writes one info line per request: method, route template, status, ms and request id', async () => {
    const response = await app.inject({ method: 'GET', url: '/api/v1/products/42?fields=name', headers: credentials });
    expect(response.statusCode).toBe(200);
    expect(lines()).toEqual([
      {
        level: 30,
        time: expect.any(String),
        service: 'shop',
        reqId: response.headers['x-request-id'],
        method: 'GET',
        route: '/api/v1/products/:id',
        status: 200,
        ms: expect.any(Number),
        msg: 'request',
      },
    ]);
    const ms = lines()[0]!.ms!;
    expect(Math.round(ms * 10) / 10).toBe(ms);
  });

  it('keeps the caller request id', async () => {
    await app.inject({ method: 'GET', url: '/api/v1/products/42', headers: { 'x-request-id': 'trace-7' } });
    expect(lines()).toEqual([expect.objectContaining({ reqId: 'trace-7', status: 200 })]);
  });

  it('writes nothing for probes, with or without a query or trailing slash', async () => {
    for (const probe of PROBES) {
      for (const url of [probe, `${probe}?verbose=1`, `${probe}/`]) {
        expect((await app.inject({ method: 'GET', url })).statusCode).toBe(200);
      }
    }
    expect(output).toEqual([]);
  });

  it('writes a 4xx at info in the same one line, with the error code but not its message', async () => {
    const invalidJson = await app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers: { ...credentials, 'content-type': 'application/json' },
      payload: `{"email":"ada@example.com","password":"${PASSWORD}"`,
    });
    const conflict = await app.inject({ method: 'DELETE', url: '/api/v1/products/42', headers: credentials });
    expect([invalidJson.statusCode, conflict.statusCode]).toEqual([400, 409]);
    expect(lines()).toEqual([
      expect.objectContaining({ level: 30, method: 'POST', route: '/api/v1/accounts', status: 400, code: 'FST_ERR_CTP_INVALID_JSON_BODY' }),
      expect.objectContaining({ level: 30, method: 'DELETE', route: '/api/v1/products/:id', status: 409, code: 'SHOP_PRODUCT_LOCKED' }),
    ]);
  });

  it('names no route for a 404, only the path, without its query and cut short', async () => {
    const response = await app.inject({ method: 'GET', url: `/api/v1/${'x'.repeat(300)}?access_token=${TOKEN}` });
    expect(response.statusCode).toBe(404);
    const [line] = lines();
    expect(lines()).toHaveLength(1);
    expect(line).toMatchObject({ level: 30, method: 'GET', status: 404, path: `/api/v1/${'x'.repeat(92)}` });
    expect(line).not.toHaveProperty('route');
  });

  it('writes a 5xx as one error line carrying the error, without the error properties that quote data', async () => {
    const response = await app.inject({ method: 'POST', url: '/api/v1/orders', headers: credentials, payload: { password: PASSWORD } });
    expect(response.statusCode).toBe(500);
    expect(lines()).toHaveLength(1);
    const [line] = lines();
    expect(line).toMatchObject({ level: 50, method: 'POST', route: '/api/v1/orders', status: 500, msg: 'request failed' });
    expect(line!.err).toEqual({
      type: 'Error',
      message: 'insert into "order" failed: could not extend file',
      stack: expect.stringContaining('insert into "order" failed'),
      code: 'XX000',
    });
  });

  it('never writes the token, the cookie, the password or the secret, whatever the request', async () => {
    const json = { 'content-type': 'application/json' };
    const requests = [
      { method: 'POST', url: '/api/v1/accounts', headers: { ...credentials, ...json }, payload: { email: 'ada@example.com', password: PASSWORD, secret: SECRET } },
      { method: 'POST', url: '/api/v1/accounts', headers: { ...credentials, ...json }, payload: { email: 'not an email', password: PASSWORD, secret: SECRET } },
      { method: 'POST', url: '/api/v1/accounts', headers: { ...credentials, ...json }, payload: `{"password":"${PASSWORD}","secret":"${SECRET}"` },
      { method: 'POST', url: '/api/v1/accounts', headers: { ...credentials, 'content-type': 'application/x-www-form-urlencoded' }, payload: `password=${PASSWORD}` },
      { method: 'POST', url: `/api/v1/orders?password=${PASSWORD}`, headers: { ...credentials, ...json }, payload: { password: PASSWORD, secret: SECRET } },
      { method: 'GET', url: `/api/v1/products/42?access_token=${TOKEN}`, headers: credentials },
      { method: 'DELETE', url: '/api/v1/products/42', headers: credentials },
      { method: 'GET', url: `/nowhere?secret=${SECRET}`, headers: credentials },
      { method: 'GET', url: '/health/readiness', headers: credentials },
    ] as const;
    const statuses = [];
    for (const request of requests) statuses.push((await app.inject(request)).statusCode);
    expect(statuses).toEqual([201, 400, 400, 415, 500, 200, 409, 404, 200]);
    expect(output).toHaveLength(requests.length - 1);
    const raw = output.join('');
    for (const value of NEVER_LOGGED) expect(raw).not.toContain(value);
    expect(raw).not.toMatch(/authorization|cookie/i);
  });
});

describe("the request line's fast path", () => {
  /** An app whose routes log through `request.log`, on `logger`. */
  async function appOn(logger: ReturnType<typeof createLogger>): Promise<App> {
    const app = await createApp({ name: 'shop', version: '1.0.0', logger, bodyLimit: 4096 });
    declareAuth(app, 'public');
    app.get('/quiet/:id', async () => ({ ok: true }));
    app.get('/chatty/:id', async (request) => {
      request.log.info({ step: 'looked up' }, 'found it');
      return { ok: true };
    });
    await app.ready();
    return app;
  }

  it("writes the bytes pino's own info would, time aside", async () => {
    const output: string[] = [];
    const logger = createLogger({ LOG_LEVEL: 'info' }, { write: (line: string) => void output.push(line) });
    const app = await appOn(logger);
    try {
      const response = await app.inject({ method: 'GET', url: '/quiet/1', headers: { 'x-request-id': 'esc"aped\\id' } });
      expect(response.statusCode).toBe(200);
      // What pino writes for the same fields through the same chain of children.
      logger.child({ service: 'shop' }).child({ reqId: response.headers['x-request-id'] }).info({ method: 'GET', route: '/quiet/:id', status: 200, ms: 1.5 }, 'request');
      const [fast, pinos] = output.map((line) => line.replace(/"time":"[^"]+"/, '"time":""').replace(/"ms":[\d.]+/, '"ms":0'));
      expect(output).toHaveLength(2);
      expect(fast).toBe(pinos);
    } finally {
      await app.close();
    }
  });

  it("gives a route that logs its request's id, and still writes the request's line", async () => {
    const output: string[] = [];
    const app = await appOn(createLogger({ LOG_LEVEL: 'info' }, { write: (line: string) => void output.push(line) }));
    try {
      const response = await app.inject({ method: 'GET', url: '/chatty/1' });
      const reqId = response.headers['x-request-id'];
      expect(output.map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([
        expect.objectContaining({ service: 'shop', reqId, step: 'looked up', msg: 'found it' }),
        expect.objectContaining({ service: 'shop', reqId, route: '/chatty/:id', status: 200, msg: 'request' }),
      ]);
    } finally {
      await app.close();
    }
  });

  it('writes nothing above info, and a mixin still reaches the line', async () => {
    const quiet: string[] = [];
    const quietApp = await appOn(createLogger({ LOG_LEVEL: 'warn' }, { write: (line: string) => void quiet.push(line) }));
    const mixed: string[] = [];
    const mixin = pino({ mixin: () => ({ zone: 'eu-1' }) }, { write: (line: string) => void mixed.push(line) });
    const mixedApp = await appOn(mixin);
    try {
      expect((await quietApp.inject({ method: 'GET', url: '/quiet/1' })).statusCode).toBe(200);
      expect(quiet).toEqual([]);
      expect((await mixedApp.inject({ method: 'GET', url: '/quiet/1' })).statusCode).toBe(200);
      expect(mixed.map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([expect.objectContaining({ zone: 'eu-1', route: '/quiet/:id', msg: 'request' })]);
    } finally {
      await Promise.all([quietApp.close(), mixedApp.close()]);
    }
  });
});

describe('the logger', () => {
  it('keeps headers, cookies, query strings and bodies out of req, res and err, and blanks credential keys', () => {
    const output: string[] = [];
    const logger = createLogger({ LOG_LEVEL: 'info' }, { write: (line: string) => void output.push(line) });
    logger.info(
      {
        req: { method: 'POST', url: `/login?token=${TOKEN}`, headers: credentials, body: { password: PASSWORD } },
        res: { statusCode: 200, headers: { 'set-cookie': `sid=${COOKIE_VALUE}` } },
        err: Object.assign(new Error('upstream failed'), { config: { headers: credentials }, cause: { response: { data: SECRET }, code: 'ETIMEDOUT' } }),
        password: PASSWORD,
        access_token: TOKEN,
        headers: credentials,
      },
      'checked',
    );
    const raw = output.join('');
    for (const value of NEVER_LOGGED) expect(raw).not.toContain(value);
    const line = JSON.parse(raw);
    expect(line).toMatchObject({
      req: { method: 'POST', url: '/login' },
      res: { statusCode: 200 },
      err: { type: 'Error', message: 'upstream failed', cause: { type: 'Object', code: 'ETIMEDOUT' } },
      password: '[redacted]',
      access_token: '[redacted]',
      headers: '[redacted]',
    });
  });

  it('stamps each line with its ISO time to the millisecond, across seconds', () => {
    const output: string[] = [];
    const logger = createLogger({ LOG_LEVEL: 'info' }, { write: (line: string) => void output.push(line) });
    const instants = ['1999-12-31T23:59:59.999Z', '2000-01-01T00:00:00.005Z', '2000-01-01T00:00:00.050Z', '2000-01-01T00:00:00.500Z', '2000-01-01T00:00:01.000Z'];
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'setInterval', 'setTimeout'] });
    try {
      for (const instant of instants) {
        jest.setSystemTime(new Date(instant));
        logger.info('tick');
      }
    } finally {
      jest.useRealTimers();
    }
    expect(output.map((line) => (JSON.parse(line) as { time: string }).time)).toEqual(instants);
  });

  it('shows a client error (AppError under 500) by its code alone', () => {
    const output: string[] = [];
    const logger = createLogger({ LOG_LEVEL: 'info' }, { write: (line: string) => void output.push(line) });
    logger.info({ err: new AppError('SHOP_PRODUCT_LOCKED', 409, 'error.internal') }, 'refused');
    expect(JSON.parse(output[0]!).err).toEqual({ type: 'AppError', code: 'SHOP_PRODUCT_LOCKED', statusCode: 409 });
  });
});

describe('the readable format for a terminal', () => {
  const output: string[] = [];
  let app: App;

  beforeAll(async () => {
    app = await buildApp(output, { pretty: true });
    addRoutes(app);
    await app.ready();
  });
  afterAll(() => app.close());

  it('prints time, level, service, method, route, status, duration and request id on one line', async () => {
    output.length = 0;
    await app.inject({ method: 'GET', url: '/api/v1/products/42', headers: { ...credentials, 'x-request-id': 'trace-9' } });
    await app.inject({ method: 'GET', url: '/health/liveness' });
    expect(output).toHaveLength(1);
    expect(output[0]).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: \[shop\] GET \/api\/v1\/products\/:id 200 \d+(\.\d)? ms {2}trace-9\n$/);
  });

  it('prints an error with its stack and no secret', async () => {
    output.length = 0;
    await app.inject({ method: 'POST', url: `/api/v1/orders?password=${PASSWORD}`, headers: credentials, payload: { password: PASSWORD, secret: SECRET } });
    await app.inject({ method: 'POST', url: '/api/v1/accounts', headers: credentials, payload: { email: 'x', password: PASSWORD, secret: SECRET } });
    const text = output.join('');
    expect(text).toMatch(/ERROR: \[shop\] POST \/api\/v1\/orders 500 /);
    expect(text).toContain('insert into "order" failed: could not extend file');
    expect(text).toMatch(/INFO: \[shop\] POST \/api\/v1\/accounts 400 FST_ERR_VALIDATION /);
    expect(text).not.toContain('"level"');
    for (const value of NEVER_LOGGED) expect(text).not.toContain(value);
  });
});
