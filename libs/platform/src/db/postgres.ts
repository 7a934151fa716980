import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import type { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';
import { isDependencyUnavailable } from '../http/errors.js';
import type { Logger } from '../logger.js';
import { createOutageLog, type OutageLog } from '../outage-log.js';
import type { Database, SqlSession } from './database.js';

export interface PostgresOptions {
  url: string;
  poolMax: number;
  logger: Logger;
  /**
   * How long to wait for a connection, new or from the pool, before a query fails; keeps a
   * dead server from stalling requests. Defaults to the statement budget (`queryTimeoutMs`):
   * a burst that only queues for a busy pool waits as long as one statement may take, instead
   * of failing while every connection is at work.
   */
  connectTimeoutMs?: number;
  /**
   * How long one statement may go unanswered before it fails: a hung server or a network that
   * drops packets answers a 503 in seconds instead of holding the request. Migrations and
   * lock waits get `LONG_QUERY_TIMEOUT_MS` instead.
   */
  queryTimeoutMs?: number;
}

/**
 * The statement budget (`DATABASE_STATEMENT_TIMEOUT_MS`'s default): a statement, or a wait for
 * a connection, fails past it, so an outage answers 503 in seconds.
 */
export const QUERY_TIMEOUT_MS = 3_000;
/** Migration scripts and waits for an advisory lock, which another replica may hold for a while. */
const LONG_QUERY_TIMEOUT_MS = 10 * 60_000;

/**
 * The drivers are loaded on first use (synchronously: openPostgres is), so a process on the
 * embedded database never pays for them.
 */
const load = createRequire(import.meta.url);
let pgDriver: typeof pg | undefined;
const driver = () => (pgDriver ??= load('pg') as typeof pg);

/** Type oids whose node-postgres parsing differs from PGlite's (see `SqlSession.query`). */
const DATE = 1082;
const DATE_ARRAY = 1182;
const INTERVAL = 1186;
const INTERVAL_ARRAY = 1187;
const TEXT_ARRAY = 1009;

/**
 * Rows read as the port promises: node-postgres's parsers except for a date, which it turns
 * into local midnight (a different instant in every time zone), and an interval, which it
 * turns into an object; both stay text, as PGlite gives them. Prisma's adapter brings its
 * own parsers per query, so this touches only the port's own queries.
 */
const rowTypes = {
  getTypeParser: (oid: number, format?: 'text' | 'binary') => {
    if (oid === DATE || oid === INTERVAL) return (value: string) => value;
    // pg-types' TypeId lists scalar oids only; it parses text[] all the same.
    if (oid === DATE_ARRAY || oid === INTERVAL_ARRAY) return driver().types.getTypeParser(TEXT_ARRAY as never);
    return driver().types.getTypeParser(oid, format);
  },
} as pg.CustomTypesConfig;

/**
 * Always the extended protocol, as PGlite does: a string of several statements is refused
 * instead of returning an array of results whose `rows` is undefined.
 */
const statement = (text: string, values?: unknown[], timeoutMs?: number) =>
  ({ text, values, queryMode: 'extended', ...(timeoutMs ? { query_timeout: timeoutMs } : {}) }) as pg.QueryConfig;

/** Errors the server answered (they carry a SQLSTATE): the connection is still sound. */
const isServerError = (error: unknown) => error instanceof Error && 'code' in error;

/** `depth` 0 is a plain connection, 1 a transaction, 2 and more savepoints within it. */
function sessionOf(client: pg.PoolClient, depth = 0): SqlSession {
  const savepoint = `savepoint_${depth}`;
  return {
    query: async <Row>(sql: string, params?: unknown[]) => (await client.query(statement(sql, params))).rows as Row[],
    exec: async (script) => {
      await client.query({ text: script, query_timeout: LONG_QUERY_TIMEOUT_MS } as pg.QueryConfig);
    },
    transaction: async (fn) => {
      await client.query(depth === 0 ? 'begin' : `savepoint ${savepoint}`);
      try {
        const result = await fn(sessionOf(client, depth + 1));
        await client.query(depth === 0 ? 'commit' : `release savepoint ${savepoint}`);
        return result;
      } catch (error) {
        await client.query(depth === 0 ? 'rollback' : `rollback to savepoint ${savepoint}`).catch(() => undefined);
        throw error;
      }
    },
  };
}

/**
 * Watches every statement of a connection, promise or callback style (the pool's own `query`
 * and Prisma's adapter use both): an answer, even an error the server sent, says the server
 * is there; a connection that broke says it is not (`outage`).
 *
 * A statement that timed out leaves node-postgres waiting on its connection for an answer
 * that may never come: the next statement there (a transaction's rollback, the next borrower's
 * query) would wait a whole timeout again. The connection is destroyed instead, so they fail
 * at once and the pool opens a fresh one.
 */
function watchStatements(client: pg.PoolClient, outage: OutageLog): void {
  const settled = (error: unknown) => {
    if (isDependencyUnavailable(error)) outage.failed(error);
    else if (!error || isServerError(error)) outage.succeeded();
    if (error instanceof Error && error.message === 'Query read timeout') {
      (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    }
  };
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (error: unknown, ...rest: unknown[]) => {
        settled(error);
        return (callback as (...a: unknown[]) => unknown)(error, ...rest);
      };
    }
    const result = query(...args);
    if (result instanceof Promise) result.then(() => settled(undefined), settled);
    return result;
  };
}

/** Advisory lock keys are 64-bit integers; a lock name maps to one by hashing. */
function lockId(key: string): string {
  return createHash('sha256').update(key).digest().readBigInt64BE(0).toString();
}

export function openPostgres(options: PostgresOptions): Database {
  const pool = new (driver().Pool)({
    connectionString: options.url,
    max: options.poolMax,
    connectionTimeoutMillis: options.connectTimeoutMs ?? options.queryTimeoutMs ?? QUERY_TIMEOUT_MS,
    query_timeout: options.queryTimeoutMs ?? QUERY_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    // A connection whose peer vanished without a word (no FIN, no RST) is found out by probes.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    types: rowTypes,
  });
  // Log an outage once, and its end with a count, not every connection or statement it breaks.
  const outage = createOutageLog(options.logger, 'postgres', {
    down: 'postgres unavailable; requests that need it answer 503 until it is back',
    up: 'postgres available again',
  });
  const onLost = (error: Error) => outage.failed(error);
  // An idle client whose server went away emits here; without a listener it would crash the process.
  pool.on('error', onLost);
  // Every client gets its own listener for all its life: whoever checked it out (this port, or
  // Prisma's adapter between two statements of a transaction) may have none at that moment,
  // and an unheard 'error' on a Client ends the process. Its next query rejects instead.
  pool.on('connect', (client) => {
    client.on('error', onLost);
    watchStatements(client, outage);
  });
  // A connection that could not be had (refused, the server starting up, no answer in time)
  // never reaches a client's listeners: the pool's `connect`, which its `query` and Prisma's
  // adapter call too, reports it.
  const acquire = pool.connect.bind(pool) as (callback?: (error: Error | undefined, ...rest: unknown[]) => void) => unknown;
  (pool as unknown as { connect: typeof acquire }).connect = (callback) => {
    if (callback) {
      return acquire((error, ...rest) => {
        if (isDependencyUnavailable(error)) outage.failed(error);
        callback(error, ...rest);
      });
    }
    return (acquire() as Promise<pg.PoolClient>).catch((error: unknown) => {
      if (isDependencyUnavailable(error)) outage.failed(error);
      throw error;
    });
  };

  const withClient = async <T>(fn: (session: SqlSession, client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    let broken: Error | undefined;
    // The pool listens only to idle clients. A checked-out one that loses its server between
    // two queries (a transaction waiting on the bus, a lock holder at work) emits 'error'
    // with nobody listening, which would crash the process; its next query rejects instead.
    const onError = (error: Error) => {
      broken = error;
    };
    client.on('error', onError);
    try {
      return await fn(sessionOf(client), client);
    } catch (error) {
      broken ??= isServerError(error) ? undefined : (error as Error);
      throw error;
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  };

  let closing: Promise<void> | undefined;

  return {
    kind: 'postgres',
    query: async <Row>(sql: string, params?: unknown[]) => (await pool.query(statement(sql, params))).rows as Row[],
    exec: (script) => withClient((session) => session.exec(script)),
    transaction: (fn) => withClient((session) => session.transaction(fn)),
    withLock: (key, fn) =>
      withClient(async (session, client) => {
        const id = lockId(key);
        await client.query(statement('select pg_advisory_lock($1)', [id], LONG_QUERY_TIMEOUT_MS));
        try {
          return await fn(session);
        } finally {
          await session.query('select pg_advisory_unlock($1)', [id]);
        }
      }),
    version: async () => {
      const [row] = await pool.query<{ version: string }>('select version()').then((r) => r.rows);
      return row?.version ?? 'unknown';
    },
    prismaAdapter: () => {
      const { PrismaPg: Adapter } = load('@prisma/adapter-pg') as { PrismaPg: typeof PrismaPg };
      return new Adapter(pool);
    },
    // pg's Pool rejects a second end(); shutdown paths may well close twice.
    close: () => (closing ??= pool.end()),
  };
}
