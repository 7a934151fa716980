// 2. and 3. The platform under test: the all-in-one as `npm start` runs it, and split mode's
// gateway and crud as two processes on real Postgres, Redis and NATS.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, createNatsBus } from '@app/platform';
import { LIVE_REVOCATIONS_REQUEST, type LiveRevocationsRequest, type RevocationEvent } from '@app/contracts';
import { createTestDatabase, freePort, startFaultProxy, startTokenIssuer, type FaultProxy } from '@app/testing';
import { answers, type Handle, lastLines, ownDatabase, ownServer, removeDir, sleep, startProcess, stopProcess, tempDir, withParts } from './processes.js';
import { BASE_DATABASE_URL, LOG_LEVEL, NATS_URL, NODE_ARGS, PASSED_THROUGH, PATH, REDIS_URL, ROOT } from './settings.js';

export const ADMIN_EMAIL = 'bench@example.com';
/** A record of the crud service's product domain (services/crud/src/domains/product.ts). */
export const PRODUCT = JSON.stringify({ name: 'Banana', price: 1.5, description: 'Yellow and sweet', stock: 120, category: 'Fruits', perishable: true });

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
export const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** The built entries the bench starts, relative to a checkout. */
export const ENTRIES = {
  allInOne: 'apps/all-in-one/dist/main.js',
  crud: 'services/crud/dist/main.js',
  gateway: 'services/gateway/dist/main.js',
  split: 'apps/split/dist/index.js',
};

/** How `npm start` runs node: the variables and node flags of package.json's start script. */
export interface NodeCommand {
  env: Record<string, string>;
  flags: string[];
}

/**
 * The variables and node flags of a start script shaped like package.json's (`exec env
 * VAR=value ... node --flag ... scripts/start.mjs`), which the all-in-one scenarios run with
 * too, so they measure the process a newcomer gets.
 */
export function nodeCommandOf(script: string): NodeCommand {
  const words = script.split(/\s+/);
  const node = words.indexOf('node');
  if (node === -1) throw new Error(`the start script does not run node: ${script}`);
  return {
    // Split at the first `=` only: a value may hold more (GLIBC_TUNABLES=glibc.malloc.hugetlb=1).
    env: Object.fromEntries(words.slice(0, node).flatMap((word) => (/^[A-Z_]+=/.test(word) ? [[word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]] : []))),
    flags: words.slice(node + 1).filter((word) => word.startsWith('--')),
  };
}

export const startScriptOf = (root: string): string => (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;

/** A build of the platform to measure: a checkout and how its node is started. */
export interface Variant {
  name: string;
  root: string;
  node: NodeCommand;
}

/** This checkout, as `npm start` runs it. */
export const THIS_CHECKOUT: Variant = { name: 'this checkout', root: ROOT, node: nodeCommandOf(startScriptOf(ROOT)) };

export function nodeEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  // MANAGEMENT_PORT 0: each process's /metrics on a free port of its own, so processes side by side never collide on 9464.
  return { PATH, HOST: '127.0.0.1', LOG_LEVEL, MANAGEMENT_PORT: '0', ...PASSED_THROUGH, ...extra };
}

export async function expectStatus(response: Response, status: number, what: string): Promise<Response> {
  if (response.status !== status) throw new Error(`${what}: expected ${status}, got ${response.status} ${(await response.text()).slice(0, 500)}`);
  return response;
}

export async function postJson(base: string, path: string, body: unknown, token?: string): Promise<{ id: string }> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  await expectStatus(response, 201, `POST ${path}`);
  return ((await response.json()) as { id: string }[])[0]!;
}

export const createProduct = async (base: string, token: string) => (await postJson(base, '/api/v1/products', JSON.parse(PRODUCT), token)).id;

/** How often a start that lost a port race is tried again, and how long apart. */
const PORT_RETRIES = 5;
const PORT_RETRY_DELAY_MS = 10_000;

export interface AllInOneOptions {
  variant?: Variant;
  nodeArgs?: string[];
  env?: Record<string, string>;
}

export interface AllInOne {
  base: string;
  token: string;
  /** The bootstrap admin's password. */
  password: string;
  /** A product's id. */
  id: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * The all-in-one as `npm start` runs it, on one port (PORT). The port is free when chosen,
 * but another process on this machine can take it before the platform binds it: a start that
 * fails with EADDRINUSE is tried again, a few times.
 */
export async function startAllInOne(options: AllInOneOptions = {}): Promise<AllInOne> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startAllInOneOnce(options);
    } catch (error) {
      const message = String((error as Error).message);
      if (!message.includes('EADDRINUSE') || attempt >= PORT_RETRIES) throw error;
      const port = /EADDRINUSE[^\n]*?(\d+\.\d+\.\d+\.\d+:\d+)/.exec(message)?.[1] ?? 'a port';
      console.log(`  (the all-in-one could not bind ${port}, taken by another process; trying again in ${PORT_RETRY_DELAY_MS / 1000} s, ${attempt}/${PORT_RETRIES - 1})`);
      await sleep(PORT_RETRY_DELAY_MS);
    }
  }
}

/** Signs the bootstrap admin in, retrying while it is being created (shortly after the platform answers). */
export async function adminToken(base: string, password: string): Promise<string> {
  const body = form({ grant_type: 'password', username: ADMIN_EMAIL, password });
  const deadline = Date.now() + 20_000;
  for (;;) {
    const response = await fetch(`${base}/api/v1/sso/token`, { method: 'POST', headers: FORM, body, signal: AbortSignal.timeout(10_000) }).catch(
      (error: Error) => ({ status: 0, text: async () => error.message, json: async () => ({}) }) as Response,
    );
    if (response.status === 200) return ((await response.json()) as { access_token: string }).access_token;
    if (Date.now() > deadline) throw new Error(`no token for the bootstrap admin within 20 s: ${response.status} ${(await response.text()).slice(0, 500)}`);
    await sleep(250);
  }
}

/** A fresh data directory, a bootstrap admin's token and one product. */
function startAllInOneOnce({ variant = THIS_CHECKOUT, nodeArgs = NODE_ARGS, env = {} }: AllInOneOptions) {
  return withParts(async (own) => {
    const dir = tempDir('all-in-one');
    own(async () => removeDir(dir));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const password = randomBytes(18).toString('base64url');
    const handle = await startProcess('all-in-one', process.execPath, [...variant.node.flags, ...nodeArgs, join(variant.root, ENTRIES.allInOne)], {
      // No DATABASE_URL, REDIS_URL or NATS_URL: the embedded database, cache and bus.
      env: nodeEnv({ ...variant.node.env, PORT: String(port), DATA_DIR: join(dir, 'data'), BOOTSTRAP_ADMIN_EMAIL: ADMIN_EMAIL, BOOTSTRAP_ADMIN_PASSWORD: password, ...env }),
      log: join(dir, 'all-in-one.log'),
      ready: answers(`${base}/api/v1/health/readiness`),
      cwd: variant.root,
    });
    own(async () => {
      const code = await stopProcess(handle);
      if (code !== 0) console.log(`  (the all-in-one exited with ${code} on SIGTERM: ${lastLines(handle.log, 1)})`);
    });
    const token = await adminToken(base, password);
    return { base, token, password, id: await createProduct(base, token), pid: handle.child.pid! };
  });
}

/** A fresh database on DATABASE_URL's server for a round's split mode; dropped on clean-up if not before. */
export async function createDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const database = await createTestDatabase(BASE_DATABASE_URL);
  return { url: database.url, drop: ownDatabase(database.drop) };
}

/** The issuer and audience of the tokens the bench mints for split mode. */
const ISSUER = 'http://localhost:3000';
const AUDIENCE = 'api-platform';

export interface Jwks {
  url: string;
  /** An access token of a fresh subject, an hour long; `claims` adds to it (a `sid`). */
  mint(claims?: Record<string, unknown>): Promise<string>;
}

/** The bench's own signing key, its public half served as a JWKS, standing in for sso in split mode. */
export async function startJwks(): Promise<Jwks> {
  const issuer = ownServer(await startTokenIssuer({ issuer: ISSUER, audience: AUDIENCE }));
  return { url: issuer.jwksUrl, mint: (claims = {}) => issuer.mint(randomUUID(), [], claims, '1h') };
}

/** Revocations per answer, as sso pages them. */
const REVOCATIONS_PAGE = 1_000;

/**
 * The bench's split mode runs no sso: this answers the verifiers' request for the live
 * revocations (LIVE_REVOCATIONS_REQUEST) as sso does, a page at a time, with `events`, on a
 * NATS stream of its own (`stream`), so no other sso on the server is asked.
 */
async function standInSso(events: RevocationEvent[]) {
  const stream = `BENCH_${randomUUID().slice(0, 8).toUpperCase()}`;
  const bus = await createNatsBus({ servers: NATS_URL, logger: createLogger({ LOG_LEVEL: 'silent' }), stream, deleteStreamOnClose: true });
  await bus.respond(LIVE_REVOCATIONS_REQUEST, async (request) => {
    const after = (request as LiveRevocationsRequest | undefined)?.after?.id;
    const rest = after === undefined ? events : events.filter((event) => event.id > after);
    const page = rest.slice(0, REVOCATIONS_PAGE);
    return rest.length > REVOCATIONS_PAGE ? { revocations: page, next: { kind: 'session', id: page.at(-1)!.id } } : { revocations: page };
  });
  return { stream, close: () => bus.close() };
}

export interface SplitOptions {
  variant?: Variant;
  crudReplicas?: number;
  revocations?: RevocationEvent[];
  /** The gateway reaches the (one) crud process through a proxy that (u) cuts. */
  relay?: boolean;
}

/**
 * Split mode as (c) measures it: crud (one or more replicas) and the gateway, each its own
 * process, on a fresh database, real Redis and NATS, verifying the bench's tokens. Not
 * apps/split's launcher, which starts every service and sso's own keys: (c) measures the
 * gateway's hop to crud and nothing else on the machine.
 */
export function startSplit(jwks: Jwks, { variant = THIS_CHECKOUT, crudReplicas = 1, revocations = [], relay = false }: SplitOptions = {}) {
  return withParts(async (own) => {
    const dir = tempDir('split');
    own(async () => removeDir(dir));
    const database = await createDatabase();
    own(database.drop);
    // crud is ready once it read the live revocations from sso: the stand-in answers it.
    const sso = await standInSso(revocations);
    own(sso.close);
    const crudPorts: number[] = [];
    for (let i = 0; i < crudReplicas; i++) crudPorts.push(await freePort());
    const gatewayPort = await freePort();
    const verify = { JWKS_URL: jwks.url, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, NODE_ENV: 'production' };
    const startCrud = (port: number, replica: number, ttl?: number) =>
      startProcess(`crud#${replica}`, process.execPath, [...NODE_ARGS, join(variant.root, ENTRIES.crud)], {
        env: nodeEnv({ ...verify, PORT: String(port), DATABASE_URL: database.url, REDIS_URL, NATS_URL, NATS_STREAM: sso.stream, ...(ttl === undefined ? {} : { CACHE_TTL_SECONDS: String(ttl) }) }),
        log: join(dir, `crud-${replica}.log`),
        ready: answers(`http://127.0.0.1:${port}/health/readiness`),
        cwd: variant.root,
      });
    const cruds: Handle[] = [];
    for (const [index, port] of crudPorts.entries()) {
      cruds[index] = await startCrud(port, index + 1);
      own(() => stopProcess(cruds[index]!));
    }
    const crudRelay: FaultProxy | undefined = relay ? await startFaultProxy({ host: '127.0.0.1', port: crudPorts[0]! }) : undefined;
    if (crudRelay) own(() => crudRelay.close());
    const crudUrls = crudRelay ? [`http://127.0.0.1:${crudRelay.port}`] : crudPorts.map((port) => `http://127.0.0.1:${port}`);
    // Several replicas: the gateway balances them as `npm run start:split` wires it (a URL list).
    const gateway = await startProcess('gateway', process.execPath, [...NODE_ARGS, join(variant.root, ENTRIES.gateway)], {
      env: nodeEnv({ ...verify, PORT: String(gatewayPort), PLATFORM_SERVICES: 'crud', CRUD_URL: crudUrls.join(',') }),
      log: join(dir, 'gateway.log'),
      ready: answers(`http://127.0.0.1:${gatewayPort}/health/liveness`),
      cwd: variant.root,
    });
    own(() => stopProcess(gateway));
    return {
      base: `http://127.0.0.1:${gatewayPort}`,
      /** crud's database, for a scenario that loads rows without the API (lists.ts). */
      databaseUrl: database.url,
      crudRelay,
      /** Restarts crud alone, on the same ports and database, with another cache TTL. */
      restartCrud: async (ttl: number) => {
        for (const [index, port] of crudPorts.entries()) {
          await stopProcess(cruds[index]!);
          cruds[index] = await startCrud(port, index + 1, ttl);
        }
      },
    };
  });
}
