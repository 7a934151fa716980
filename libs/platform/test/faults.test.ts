import { randomUUID } from 'node:crypto';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { UpstreamError } from '@app/contracts';
import {
  AppError,
  createLogger,
  createNatsBus,
  createOutageLog,
  createRedisCache,
  createTokenVerifier,
  isDependencyUnavailable,
  openPostgres,
  type Bus,
  type Cache,
  type Database,
} from '@app/platform';
import { createTestDatabase, describeIf, eventually, fakePostgres, NEEDS_REAL_NATS, NEEDS_REAL_POSTGRES, NEEDS_REAL_REDIS, REAL, SETTLE_BUDGET_MS, silentLogger, startFaultProxy, type FaultProxy } from '@app/testing';

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const hostPort = (url: string) => ({ host: new URL(url).hostname, port: Number(new URL(url).port) });

/** How an operation under a fault ended, and how long it took to. */
interface Outcome {
  ok: boolean;
  error?: unknown;
  ms: number;
}
async function timed(operation: () => Promise<unknown>): Promise<Outcome> {
  const started = Date.now();
  try {
    await operation();
    return { ok: true, ms: Date.now() - started };
  } catch (error) {
    return { ok: false, error, ms: Date.now() - started };
  }
}

/** Runs `operation` `concurrency` at a time until `stop()` says so; collects every outcome. */
function load(operation: (n: number) => Promise<unknown>, concurrency: number) {
  const outcomes: Outcome[] = [];
  let running = true;
  let n = 0;
  const workers = Array.from({ length: concurrency }, async () => {
    while (running) {
      outcomes.push(await timed(() => operation(n++)));
      // A failure at once must not starve the timers (the fault's own among them).
      await delay(5);
    }
  });
  return {
    outcomes,
    stop: async () => {
      running = false;
      await Promise.all(workers);
      return outcomes;
    },
  };
}

describe('fault proxy', () => {
  let echo: Server;
  let proxy: FaultProxy;
  beforeAll(async () => {
    echo = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    proxy = await startFaultProxy({ host: '127.0.0.1', port: (echo.address() as AddressInfo).port });
  });
  afterAll(async () => {
    await proxy.close();
    await new Promise((resolve) => echo.close(resolve));
  });

  /** Opens a connection through the proxy, sends a line, and says what came of it within `ms`. */
  const probe = (ms = 300) =>
    new Promise<'echoed' | 'reset' | 'silent'>((resolve) => {
      const socket = connect(proxy.port, '127.0.0.1');
      const timer = setTimeout(() => {
        socket.destroy();
        resolve('silent');
      }, ms);
      socket.on('data', () => {
        clearTimeout(timer);
        socket.destroy();
        resolve('echoed');
      });
      socket.on('error', () => {
        clearTimeout(timer);
        resolve('reset');
      });
      socket.on('close', () => {
        clearTimeout(timer);
        resolve('reset');
      });
      socket.write('ping\n');
    });

  it('forwards, refuses when cut, holds silently when blackholed, and forwards again when restored', async () => {
    expect(await probe()).toBe('echoed');
    proxy.cut();
    expect(await probe()).toBe('reset');
    proxy.blackhole();
    expect(await probe()).toBe('silent');
    proxy.restore();
    expect(await probe()).toBe('echoed');
  });

  it('resets the connections open when cut, and silences them when blackholed', async () => {
    const open = () =>
      new Promise<Socket>((resolve) => {
        const socket = connect(proxy.port, '127.0.0.1', () => resolve(socket));
      });
    const first = await open();
    const closed = new Promise((resolve) => first.once('close', resolve));
    first.on('error', () => undefined);
    proxy.cut();
    await closed;
    proxy.restore();

    const second = await open();
    second.on('error', () => undefined);
    const echoed = new Promise((resolve) => second.once('data', resolve));
    second.write('a');
    await echoed;
    proxy.blackhole();
    let answered = false;
    second.on('data', () => (answered = true));
    second.write('b');
    await delay(200);
    expect(answered).toBe(false);
    expect(second.destroyed).toBe(false);
    proxy.restore();
    second.destroy();
  });
});

/** A PrismaClientKnownRequestError's shape for a server error its driver adapter passed on. */
function prismaDatabaseError(code: string, sqlState: string, message: string) {
  const driverAdapterError = Object.assign(new Error(message), {
    name: 'DriverAdapterError',
    cause: { originalCode: sqlState, originalMessage: message, kind: 'postgres', code: sqlState, severity: 'FATAL', message },
  });
  return Object.assign(new Error(`Database error. Code: \`${sqlState}\`. Message: \`${message}\``), {
    name: 'PrismaClientKnownRequestError',
    code,
    meta: { modelName: 'RefreshToken', driverAdapterError },
  });
}

/** A logger whose lines (parsed) a test reads. */
function capturedLogger(level: 'info' | 'warn' = 'info') {
  const lines: { level: number; msg: string; [field: string]: unknown }[] = [];
  const logger = createLogger({ LOG_LEVEL: level }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
  return { logger, lines };
}

describe('createOutageLog', () => {
  it('logs an outage once when it starts, with its first error, and once when it ends, with the count of failures', () => {
    const { logger, lines } = capturedLogger();
    const outage = createOutageLog(logger, 'cache', { fields: { domain: 'product' } });
    outage.succeeded();
    for (let n = 0; n < 50; n++) outage.failed(new Error(`refused ${n}`));
    expect(outage.down).toBe(true);
    outage.succeeded();
    outage.succeeded();
    outage.failed(new Error('again'));
    outage.succeeded();
    expect(lines.map(({ level, msg, dependency, domain, failures, err }) => ({ level, msg, dependency, domain, failures, err: (err as { message?: string })?.message }))).toEqual([
      { level: 40, msg: 'cache unavailable', dependency: 'cache', domain: 'product', failures: undefined, err: 'refused 0' },
      { level: 30, msg: 'cache available again', dependency: 'cache', domain: 'product', failures: 50, err: undefined },
      { level: 40, msg: 'cache unavailable', dependency: 'cache', domain: 'product', failures: undefined, err: 'again' },
      { level: 30, msg: 'cache available again', dependency: 'cache', domain: 'product', failures: 1, err: undefined },
    ]);
    expect(outage.down).toBe(false);
  });
});

describe('isDependencyUnavailable', () => {
  const socketError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, syscall: 'connect', errno: -1 });
  it.each([
    ['a refused socket', socketError('ECONNREFUSED')],
    ['a reset socket, wrapped', new Error('query failed', { cause: socketError('ECONNRESET') })],
    ['node-postgres losing its connection', new Error('Connection terminated unexpectedly')],
    ['node-postgres finding no connection in time', new Error('timeout exceeded when trying to connect')],
    ['node-postgres hearing no answer', new Error('Query read timeout')],
    ['the server shutting down', Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' })],
    ['a connection exception', Object.assign(new Error('connection failure'), { code: '08006' })],
    ['Prisma not reaching the server', Object.assign(new Error("Can't reach database server"), { code: 'P1001' })],
    ['Prisma finding no connection in time', Object.assign(new Error('Timed out fetching a new connection'), { code: 'P2024' })],
    ['the driver adapter', Object.assign(new Error('adapter'), { cause: { kind: 'ConnectionClosed' } })],
    ['a peer service', new UpstreamError('identity', 'unreachable')],
    // As Prisma 7 really throws them (seen against a server answering 57P03 at connect): its
    // own code says only "database error", the adapter's error in meta carries the SQLSTATE.
    ['Prisma on a server starting up (P2039)', prismaDatabaseError('P2039', '57P03', 'the database system is starting up')],
    ['Prisma raw query on a server shutting down (P2010)', prismaDatabaseError('P2010', '57P01', 'terminating connection due to administrator command')],
  ])('is true for %s', (_name, error) => {
    expect(isDependencyUnavailable(error)).toBe(true);
  });
  it.each([
    ['a unique violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['a syntax error', Object.assign(new Error('syntax error at or near'), { code: '42601' })],
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a Prisma record not found', Object.assign(new Error('No record found'), { code: 'P2025' })],
    ['Prisma on a unique violation the adapter passed on (P2039)', prismaDatabaseError('P2039', '23505', 'duplicate key value violates unique constraint')],
    ['nothing', undefined],
  ])('is false for %s', (_name, error) => {
    expect(isDependencyUnavailable(error)).toBe(false);
  });
});

describe('a token verifier whose keys cannot be read', () => {
  const options = { issuer: 'http://localhost:3000', audience: 'api-platform', jwksUrl: 'http://127.0.0.1:1/jwks' };
  /** A well-formed ES256 token (never verified: the key lookup fails first). */
  const token = [{ alg: 'ES256', kid: 'k', typ: 'JWT' }, { sub: 'x' }].map((part) => Buffer.from(JSON.stringify(part)).toString('base64url')).join('.') + '.c2ln';

  it('passes the outage on (a 503), instead of calling the token invalid (a 401)', async () => {
    const down = createTokenVerifier(options, async () => {
      throw new Error('Connection terminated unexpectedly');
    });
    const error = await down.verify(token).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(AppError);
    expect(isDependencyUnavailable(error)).toBe(true);
  });

  it('still calls a token with an unknown key invalid', async () => {
    const unknownKey = createTokenVerifier(options, async () => {
      throw new Error('no applicable key found in the JSON Web Key Set');
    });
    const error = await unknownKey.verify(token).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).statusCode).toBe(401);
  });
});

describeIf(REAL.databaseUrl, NEEDS_REAL_POSTGRES)('postgres through a fault proxy, under load', () => {
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let proxy: FaultProxy;
  let database: Database;
  /** Ids of rows whose insert resolved: every one must be there at the end. */
  const acknowledged: string[] = [];

  beforeAll(async () => {
    testDb = await createTestDatabase(REAL.databaseUrl!);
    proxy = await startFaultProxy(hostPort(testDb.url));
    database = openPostgres({ url: proxy.url(testDb.url), poolMax: 8, logger: silentLogger() });
    await database.exec('create table fault_rows (id uuid primary key, at timestamptz not null default now())');
  });
  afterAll(async () => {
    await database?.close().catch(() => undefined);
    await proxy?.close();
    await testDb?.drop();
  });

  /** Every path that holds a connection: pool queries, transactions (one waits between statements), locks, Prisma's adapter. */
  const operations = [
    async () => database.query('select pg_sleep(0.02)'),
    async () => {
      const id = randomUUID();
      await database.transaction(async (tx) => {
        await tx.query('insert into fault_rows (id) values ($1)', [id]);
        await delay(30);
        await tx.query('select count(*) from fault_rows');
      });
      acknowledged.push(id);
    },
    async () => {
      const id = randomUUID();
      await database.query('insert into fault_rows (id) values ($1)', [id]);
      acknowledged.push(id);
    },
    async () => database.withLock(`fault-${randomUUID()}`, async (session) => session.query('select 1')),
    async () => {
      // As Prisma runs an interactive transaction: a connection it checked out of the shared pool.
      const adapter = await (database.prismaAdapter() as { connect(): Promise<PrismaLike> }).connect();
      const tx = await adapter.startTransaction();
      try {
        await tx.executeRaw({ sql: 'select pg_sleep(0.03)', args: [], argTypes: [] });
        await tx.executeRaw({ sql: 'COMMIT', args: [], argTypes: [] });
        await tx.commit();
      } catch (error) {
        await tx.rollback().catch(() => undefined);
        throw error;
      }
    },
  ];
  interface PrismaTx {
    executeRaw(query: { sql: string; args: unknown[]; argTypes: unknown[] }): Promise<number>;
    commit(): Promise<void>;
    rollback(): Promise<void>;
  }
  interface PrismaLike {
    startTransaction(): Promise<PrismaTx>;
  }
  const run = (n: number) => operations[n % operations.length]!();

  async function outage(fault: 'cut' | 'blackhole') {
    const traffic = load(run, 12);
    await delay(300);
    const before = traffic.outcomes.length;
    proxy[fault]();
    const faulted = Date.now();
    await delay(6_000);
    const during = traffic.outcomes.slice(before);
    proxy.restore();
    // Back: a query succeeds again.
    const back = await eventually(async () => (await timed(() => database.query('select 1'))).ok, SETTLE_BUDGET_MS, 100);
    const all = await traffic.stop();
    return { during, all, back, faulted };
  }

  it.each(['cut', 'blackhole'] as const)(
    'when %s: every operation fails as unavailable, nothing crashes, and it resumes',
    async (fault) => {
      const { during, back } = await outage(fault);
      const failures = during.filter((outcome) => !outcome.ok);
      expect(failures.length).toBeGreaterThan(0);
      const unexplained = failures.filter((outcome) => !isDependencyUnavailable(outcome.error)).map((outcome) => String(outcome.error));
      expect(unexplained).toEqual([]);
      expect(back).toBe(true);
      // Every operation kind works again, on connections made after the outage.
      for (const operation of operations) expect((await timed(operation)).error).toBeUndefined();
    },
  );

  it('kept every insert it acknowledged', async () => {
    expect(acknowledged.length).toBeGreaterThan(0);
    const rows = await database.query<{ id: string }>('select id from fault_rows where id = any($1::uuid[])', [acknowledged]);
    expect(rows.length).toBe(acknowledged.length);
  });
});

describeIf(REAL.redisUrl, NEEDS_REAL_REDIS)('redis through a fault proxy, under load', () => {
  let proxy: FaultProxy;
  let cache: Cache;
  beforeAll(async () => {
    proxy = await startFaultProxy(hostPort(REAL.redisUrl!));
    cache = await createRedisCache({ url: proxy.url(REAL.redisUrl!), logger: silentLogger(), keyPrefix: `fault:${randomUUID()}:` });
  });
  afterAll(async () => {
    await cache?.close();
    await proxy?.close();
  });

  it.each(['cut', 'blackhole'] as const)('when %s: commands fail, nothing crashes, and it resumes', async (fault) => {
    const traffic = load(async (n) => (n % 2 ? cache.get(`k${n % 10}`) : cache.set(`k${n % 10}`, 'v', 60)), 8);
    await delay(200);
    const before = traffic.outcomes.length;
    proxy[fault]();
    await delay(3_000);
    const during = traffic.outcomes.slice(before);
    proxy.restore();
    expect(await eventually(async () => (await timed(() => cache.set('back', 'yes', 60))).ok, SETTLE_BUDGET_MS, 100)).toBe(true);
    await traffic.stop();
    expect(during.some((outcome) => !outcome.ok)).toBe(true);
    expect(await cache.get('back')).toBe('yes');
  });
});

describeIf(REAL.natsUrl, NEEDS_REAL_NATS)('nats through a fault proxy', () => {
  let proxy: FaultProxy;
  let bus: Bus;
  const received: string[] = [];
  beforeAll(async () => {
    proxy = await startFaultProxy(hostPort(REAL.natsUrl!));
    bus = await createNatsBus({
      servers: proxy.url(REAL.natsUrl!),
      logger: silentLogger(),
      stream: `FAULT_${randomUUID().slice(0, 8).toUpperCase()}`,
      deleteStreamOnClose: true,
    });
    await bus.subscribe('fault.*', async (event) => void received.push(event.id), { group: 'fault' });
  });
  afterAll(async () => {
    await bus?.close().catch(() => undefined);
    await proxy?.close();
  });

  it.each(['cut', 'blackhole'] as const)('when %s: publishes fail without crashing, and events flow again after it returns', async (fault) => {
    const before = randomUUID();
    await bus.publish('fault.before', {}, { id: before });
    expect(await eventually(async () => received.includes(before))).toBe(true);
    proxy[fault]();
    const during = await timed(() => bus.publish('fault.during', {}, { id: randomUUID() }));
    expect(during.ok).toBe(false);
    proxy.restore();
    const after = randomUUID();
    // The client reconnects by itself; a publish succeeds again, and the consumer receives it.
    expect(await eventually(async () => (await timed(() => bus.publish('fault.after', {}, { id: after }))).ok, SETTLE_BUDGET_MS, 250)).toBe(true);
    expect(await eventually(async () => received.includes(after))).toBe(true);
  });
});

describeIf(REAL.databaseUrl, NEEDS_REAL_POSTGRES)('postgres starting up, frozen, or only busy', () => {
  let testDb: Awaited<ReturnType<typeof createTestDatabase>>;
  let proxy: FaultProxy;
  beforeAll(async () => {
    testDb = await createTestDatabase(REAL.databaseUrl!);
    proxy = await startFaultProxy(hostPort(testDb.url));
  });
  afterAll(async () => {
    await proxy?.close();
    await testDb?.drop();
  });

  it('a burst that only queues for a one-connection pool waits its turn within the statement budget, and every statement succeeds', async () => {
    const database = openPostgres({ url: testDb.url, poolMax: 1, queryTimeoutMs: 60_000, logger: silentLogger() });
    try {
      // 20 statements of 100 ms each, in turn on one connection: the last waits about 2 s for it.
      const outcomes = await Promise.all(Array.from({ length: 20 }, () => timed(() => database.query('select pg_sleep(0.1)'))));
      expect(outcomes.filter((outcome) => !outcome.ok).map((outcome) => String(outcome.error))).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it.each(['starting-up', 'frozen'] as const)(
    'when %s: statements fail as unavailable, the pool logs one down line for all of them, and one up line with their count once it is back',
    async (behaviour) => {
      const { logger, lines } = capturedLogger();
      const database = openPostgres({ url: proxy.url(testDb.url), poolMax: 4, queryTimeoutMs: 500, logger });
      try {
        await database.query('select 1');
        proxy.impersonate(fakePostgres(behaviour));
        const failed = await Promise.all(Array.from({ length: 12 }, () => timed(() => database.query('select 1'))));
        expect(failed.filter((outcome) => outcome.ok || !isDependencyUnavailable(outcome.error)).map((outcome) => String(outcome.error))).toEqual([]);
        if (behaviour === 'starting-up') expect(failed.map((outcome) => (outcome.error as { code?: string }).code)).toContain('57P03');
        proxy.restore();
        expect(await eventually(async () => (await timed(() => database.query('select 1'))).ok, SETTLE_BUDGET_MS, 100)).toBe(true);
        const pool = lines.filter((line) => line.dependency === 'postgres');
        expect(pool.map((line) => line.msg)).toEqual(['postgres unavailable; requests that need it answer 503 until it is back', 'postgres available again']);
        expect(pool[1]!.failures).toBeGreaterThanOrEqual(12);
      } finally {
        proxy.restore();
        await database.close();
      }
    },
  );
});
