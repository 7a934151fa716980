import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import type { Logger } from '../logger.js';
import type { Database, SqlSession } from './database.js';

export interface PostgresOptions {
  url: string;
  poolMax: number;
  logger: Logger;
  /** How long to wait for a connection before a query fails; keeps a dead server from stalling requests. */
  connectTimeoutMs?: number;
}

function sessionOf(client: pg.PoolClient): SqlSession {
  const session: SqlSession = {
    query: async <Row>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as Row[],
    exec: async (script) => {
      await client.query(script);
    },
    transaction: async (fn) => {
      await client.query('begin');
      try {
        const result = await fn(session);
        await client.query('commit');
        return result;
      } catch (error) {
        await client.query('rollback').catch(() => undefined);
        throw error;
      }
    },
  };
  return session;
}

/** Advisory lock keys are 64-bit integers; a lock name maps to one by hashing. */
function lockId(key: string): string {
  return createHash('sha256').update(key).digest().readBigInt64BE(0).toString();
}

export function openPostgres(options: PostgresOptions): Database {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolMax,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 3_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
  });
  // An idle client whose server went away emits here; without a listener it would crash the process.
  pool.on('error', (error) => options.logger.warn({ err: error }, 'postgres connection lost'));

  const withClient = async <T>(fn: (session: SqlSession) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    let broken: Error | undefined;
    try {
      return await fn(sessionOf(client));
    } catch (error) {
      broken = error instanceof Error && 'code' in error ? undefined : (error as Error);
      throw error;
    } finally {
      client.release(broken);
    }
  };

  return {
    kind: 'postgres',
    query: async <Row>(sql: string, params?: unknown[]) => (await pool.query(sql, params)).rows as Row[],
    exec: (script) => withClient((session) => session.exec(script)),
    transaction: (fn) => withClient((session) => session.transaction(fn)),
    withLock: (key, fn) =>
      withClient(async (session) => {
        const id = lockId(key);
        await session.query('select pg_advisory_lock($1)', [id]);
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
    prismaAdapter: () => new PrismaPg(pool),
    close: () => pool.end(),
  };
}
