/* eslint-disable no-restricted-properties -- tests pick their mode from the environment */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import {
  createLocalBus,
  createLogger,
  createMemoryCache,
  createNatsBus,
  createRedisCache,
  loadConfig,
  openPGlite,
  openPostgres,
  type Bus,
  type Dependencies,
  type Env,
  type Logger,
  type ConfigOf,
  type ConfigSchema,
  type Subscription,
} from '@app/platform';
import { LIVE_REVOCATIONS_REQUEST, type RevocationEvent } from '@app/contracts';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from 'jose';
import pg from 'pg';
import { SETTLE_BUDGET_MS } from './budgets.js';

/** The real servers named by the environment, when a suite should also run against them. */
export const REAL = {
  databaseUrl: process.env.DATABASE_URL || undefined,
  redisUrl: process.env.REDIS_URL || undefined,
  natsUrl: process.env.NATS_URL || undefined,
};

export type TestMode = 'embedded' | 'real';

/** Modes an end-to-end suite runs in: always embedded, and real when all three servers are named. */
export function testModes(): TestMode[] {
  return REAL.databaseUrl && REAL.redisUrl && REAL.natsUrl ? ['embedded', 'real'] : ['embedded'];
}

/**
 * A config for tests: silent logs, ephemeral ports, and no real servers unless asked for. The
 * shared variables and those of `schemas`: a service's own (`[crudConfig]`), or the whole
 * platform's (the all-in-one's PLATFORM_CONFIG), parsed as the process that runs them does.
 */
export function testConfig<const Schemas extends readonly ConfigSchema[] = []>(overrides: Env = {}, schemas?: Schemas): ConfigOf<Schemas> {
  return loadConfig({ LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', NODE_ENV: 'test', HOST: '127.0.0.1', ...overrides }, schemas);
}

export const silentLogger = (): Logger => createLogger({ LOG_LEVEL: (process.env.TEST_LOG_LEVEL as 'silent') ?? 'silent' });

/** A fresh database on the real Postgres server, unique to this run, dropped by `drop()`. */
export async function createTestDatabase(baseUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `test_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: baseUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}

/**
 * Opens dependencies for a test: embedded (in-memory PGlite, memory cache, local bus) or the
 * real servers, each isolated for this run (a fresh database, a key prefix, a stream). Their
 * config holds the shared variables and those of `schemas` (see `testConfig`).
 */
export async function openTestDependencies<const Schemas extends readonly ConfigSchema[] = []>(
  mode: TestMode,
  overrides: Env = {},
  schemas?: Schemas,
): Promise<
  Dependencies<ConfigOf<Schemas>> & {
    dispose(): Promise<void>;
    /** The run's own JetStream stream (real mode): NATS_STREAM for processes that share this bus. */
    natsStream?: string;
    /** The run's own Redis key prefix (real mode): CACHE_KEY_PREFIX for processes that share this cache. */
    cacheKeyPrefix?: string;
  }
> {
  const logger = silentLogger();
  if (mode === 'embedded') {
    const config = testConfig(overrides, schemas);
    const database = await openPGlite({ dataDir: 'memory://', logger });
    const cache = createMemoryCache({ maxEntries: 10_000 });
    const bus = createLocalBus({ logger });
    const deps = { config, logger, database, cache, bus };
    return { ...deps, dispose: async () => Promise.all([bus.close(), cache.close(), database.close()]).then(() => undefined) };
  }
  if (!REAL.databaseUrl || !REAL.redisUrl || !REAL.natsUrl) throw new Error('real mode needs DATABASE_URL, REDIS_URL and NATS_URL');
  const testDb = await createTestDatabase(REAL.databaseUrl);
  const run = randomUUID().slice(0, 8);
  const config = testConfig({ DATABASE_URL: testDb.url, REDIS_URL: REAL.redisUrl, NATS_URL: REAL.natsUrl, ...overrides }, schemas);
  const database = openPostgres({ url: testDb.url, poolMax: 5, logger });
  const cacheKeyPrefix = `test:${run}:`;
  const cache = await createRedisCache({ url: REAL.redisUrl, logger, keyPrefix: cacheKeyPrefix });
  const natsStream = `TEST_${run.toUpperCase()}`;
  const bus = await createNatsBus({ servers: REAL.natsUrl, logger, stream: natsStream, deleteStreamOnClose: true });
  return {
    natsStream,
    cacheKeyPrefix,
    config,
    logger,
    database,
    cache,
    bus,
    dispose: async () => {
      await Promise.allSettled([bus.close(), cache.close()]);
      await database.close();
      await testDb.drop();
    },
  };
}

/**
 * The first port of the kernel's range for the local ports of outgoing connections (and of
 * `listen(0)`): every connection a test opens to Postgres, Redis or a service takes one from it.
 */
function firstEphemeralPort(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32768;
  } catch {
    return 32768;
  }
}

const canListen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createNetServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * A free TCP port on loopback, for a server that must know its port before it listens (a
 * peer's URL in its configuration). Taken below the ephemeral range: a port `listen(0)` hands
 * out is one an outgoing connection may take as its own local port before the server binds
 * it, and suites failed on EADDRINUSE that way while their database clients connected.
 */
export async function freePort(): Promise<number> {
  const low = 10_000;
  const high = firstEphemeralPort();
  for (let attempt = 0; attempt < 100 && high > low + 1_000; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (await canListen(port)) return port;
  }
  // No room below the range (or nothing free there): the kernel's pick, as before.
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Keeps the given TCP ports taken for as long as a test needs them, on every IPv4 interface,
 * so nothing can bind them. A port someone else already holds counts as taken: it stays so.
 */
export async function occupyPorts(ports: readonly number[]): Promise<{ release(): Promise<void> }> {
  const servers: NetServer[] = [];
  for (const port of ports) {
    // A connection someone makes to a held port is closed at once: left open, it would keep
    // `release` (server.close) waiting for the stranger, and the stranger waiting for an answer.
    const server = createNetServer((socket) => socket.destroy());
    const taken = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '0.0.0.0', () => resolve(true));
    });
    if (taken) servers.push(server);
  }
  return { release: async () => void (await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))) };
}

/** How many listening TCP servers this process holds now (Node's own count of its handles). */
export function listeningServerCount(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === 'TCPServerWrap').length;
}

/**
 * The TCP ports another process listens on, read from Linux's /proc: its socket descriptors
 * matched against the kernel's socket tables. Needs no tool (ss, lsof) in the image.
 */
export function listeningPorts(pid: number): number[] {
  if (!existsSync(`/proc/${pid}/net/tcp`)) throw new Error('listeningPorts reads /proc: it needs Linux');
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch {
      // closed between the listing and the read
    }
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    const path = `/proc/${pid}/net/${table}`;
    if (!existsSync(path)) continue;
    // Columns: sl local_address rem_address st ... inode (10th); state 0A is LISTEN.
    for (const line of readFileSync(path, 'utf8').split('\n').slice(1)) {
      const columns = line.trim().split(/\s+/);
      if (columns[3] === '0A' && inodes.has(columns[9] ?? '')) ports.add(parseInt(columns[1]!.split(':')[1]!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** A redis-server of the test's own on a free port, which the test may stop and start again. */
export async function startOwnRedis(): Promise<{ url: string; stop(): Promise<void>; start(): Promise<void> }> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const socket = createNetServer();
        socket.once('error', () => resolve(true));
        socket.listen(port, '127.0.0.1', () => socket.close(() => resolve(false)));
      });
      if (up) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('redis-server did not start');
  };
  const stop = async () => {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, stop, start };
}

/**
 * Stands in for sso's record of revocations on `bus`, as `startTokenIssuer` stands in for its
 * keys: a service tested without sso is not ready until someone answers its request for the
 * live revocations (in process, or processes sharing the run's NATS stream). Answers `events`.
 */
export function answerRevocationsAsSso(bus: Bus, events: RevocationEvent[] = []): Promise<Subscription> {
  return bus.respond(LIVE_REVOCATIONS_REQUEST, async () => ({ revocations: events }));
}

export interface TokenIssuer {
  jwksUrl: string;
  issuer: string;
  audience: string;
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
  /** Signs an access token for `sub` with `roles`; `claims` overrides any standard claim. */
  mint(sub: string, roles?: string[], claims?: JWTPayload, expiresIn?: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * An ES256 key pair of the test's own, its public key served as a JWKS over HTTP, standing
 * in for sso where a suite must not depend on it.
 */
export async function startTokenIssuer(options: { issuer?: string; audience?: string } = {}): Promise<TokenIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const kid = randomUUID();
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  const server: Server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [publicJwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const issuer = options.issuer ?? 'http://localhost:3000';
  const audience = options.audience ?? 'api-platform';
  return {
    jwksUrl: `http://127.0.0.1:${port}/jwks`,
    issuer,
    audience,
    kid,
    privateKey,
    publicJwk,
    mint: (sub, roles = [], claims = {}, expiresIn = '15m') =>
      new SignJWT({ roles, ...claims })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject(sub)
        .setIssuedAt()
        .setJti(randomUUID())
        .setExpirationTime(expiresIn)
        .sign(privateKey),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A TCP proxy on loopback in front of a real server, which a test can close and reopen on
 * the same port: the server "goes away" for the client without stopping the shared server.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<{ port: number; stop(): Promise<void>; start(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let server: NetServer | undefined;
  let port = 0;
  const start = async () => {
    if (server) return;
    server = createNetServer((client) => {
      const upstream = connect(target.port, target.host);
      sockets.add(client);
      sockets.add(upstream);
      const drop = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => server!.once('error', reject).listen(port, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  };
  const stop = async () => {
    for (const socket of sockets) socket.destroy();
    sockets.clear();
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
    server = undefined;
  };
  await start();
  return { port, stop, start };
}

/**
 * Polls `probe` until it returns true or the timeout passes; returns the last result. The
 * timeout guards against a hang only: a test asserts that the thing happens, not how soon.
 */
export async function eventually(probe: () => Promise<boolean>, timeoutMs = SETTLE_BUDGET_MS, intervalMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A parsed JSON body as tests inspect it: any shape, checked by the assertions themselves. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- assertions, not types, check the shape
export type Json = Record<string, any>;

export async function readJson(response: Response): Promise<Json> {
  return (await response.json()) as Json;
}

export * from './budgets.js';
export * from './directory-double.js';
export * from './independent-jws.js';
export * from './fault-proxy.js';
export * from './fake-postgres.js';
export * from './raw-http.js';
export * from './skips.js';

/** The CORS headers of an answer (`access-control-*`), from fetch's Headers or inject's record. */
export function corsHeadersOf(headers: Headers | Record<string, unknown>): Record<string, unknown> {
  const entries = headers instanceof Headers ? [...headers] : Object.entries(headers);
  return Object.fromEntries(entries.filter(([name]) => name.startsWith('access-control-')));
}

/** The response headers the edge lets a page of an allowed origin read (CORS_EXPOSED_HEADERS). */
export const CORS_EXPOSED = 'Link, ETag, Location, Content-Range, Retry-After, X-Request-Id';

/** What the edge answers a preflight from an allowed `origin` with, whatever route it names. */
export const corsPreflightAllowance = (origin: string) => ({
  'access-control-allow-origin': origin,
  'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE',
  'access-control-allow-headers': 'authorization, content-type, accept-language, prefer, x-request-id, if-match, if-none-match, idempotency-key',
  'access-control-expose-headers': CORS_EXPOSED,
  'access-control-max-age': '7200',
});

/**
 * Locks rows (`select ... for update`, or an uncommitted insert) in a transaction of the
 * test's own on a real Postgres server, until `release()` commits it or `rollback()` undoes
 * it: writes sent meanwhile all queue behind it, so what they do once it ends is a race run
 * the same way every time.
 */
export async function holdRowLocks(databaseUrl: string, select: string, params: unknown[]): Promise<{ release(): Promise<void>; rollback(): Promise<void> }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('begin');
  await client.query(select, params);
  const end = async (command: 'commit' | 'rollback') => {
    await client.query(command);
    await client.end();
  };
  return { release: () => end('commit'), rollback: () => end('rollback') };
}

/** What `injectJson` answers: the status, the headers, the raw text and the parsed JSON body (if any). */
export interface InjectedAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: Json | undefined;
}

/** One request through `app.inject`, with an optional bearer token and JSON body; the answer parsed. */
export async function injectJson(
  app: { inject: (options: { method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string; headers: Record<string, string>; payload?: Json }) => PromiseLike<{ statusCode: number; headers: Record<string, string | string[] | number | undefined>; body: string; json(): unknown }> },
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  url: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<InjectedAnswer> {
  const response = await app.inject({
    method,
    url,
    headers: { ...(options.token ? { authorization: `Bearer ${options.token}` } : {}), ...options.headers },
    ...(options.body === undefined ? {} : { payload: options.body as Json }),
  });
  return { status: response.statusCode, headers: response.headers as InjectedAnswer['headers'], text: response.body, body: response.body ? (response.json() as Json) : undefined };
}
