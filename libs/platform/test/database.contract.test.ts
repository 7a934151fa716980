import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { openPGlite, openPostgres, type Database } from '@app/platform';
import { createTestDatabase, REAL, SETTLE_BUDGET_MS, silentLogger } from '@app/testing';

/**
 * What Prisma asks of `prismaAdapter()`: the driver adapter interface of
 * @prisma/driver-adapter-utils, as far as these tests use it. A real PrismaClient needs a
 * generated client, and the only ones live in services, which depend on this lib.
 */
interface PrismaAdapterFactory {
  connect(): Promise<{
    queryRaw(query: PrismaQuery): Promise<{ columnNames: string[]; rows: unknown[][] }>;
    executeRaw(query: PrismaQuery): Promise<number>;
    dispose(): Promise<void>;
  }>;
}
interface PrismaQuery {
  sql: string;
  args: unknown[];
  argTypes: { scalarType: string; arity: 'scalar' | 'list' }[];
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Rejects when `promise` takes longer than `ms`: a lock that never comes fails the test, not the run. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The contract both databases pass: what the migrator, the outbox and every repository rely on. */
function databaseContract(name: string, open: () => Promise<Database>) {
  describe(`${name} database`, () => {
    let database: Database;
    /** A table of the test's own, so tests never see each other's rows. */
    const table = async () => {
      const created = `"t_${randomUUID().replace(/-/g, '')}"`;
      await database.exec(`create table ${created} (id serial primary key, v text not null unique)`);
      return created;
    };
    const values = async (t: string) => (await database.query<{ v: string }>(`select v from ${t} order by id`)).map((row) => row.v);

    beforeAll(async () => {
      database = await open();
    });
    afterAll(async () => {
      await database.close();
    });

    it('returns rows typed alike on every implementation, with parameters bound by position', async () => {
      const [row] = await database.query(
        `select $1::int4 + 1 as int, $2::int8 as big, count(*) over () as count, $3::numeric(10,2) as numeric,
                2.5::float8 as float, $4::boolean as bool, $5::text as text, $6::uuid as uuid,
                $7::timestamptz as at, '2026-01-02'::date as day, '12:30'::time as time,
                interval '1 day 2 hours' as interval, $8::jsonb as json, $9::bytea as bytes,
                $10::text[] as tags, array[1, 9007199254740993]::int8[] as bigs,
                array['2026-01-02']::date[] as days, $11::text as nothing`,
        [
          41,
          '9007199254740993',
          '12.5',
          true,
          'x',
          '00000000-0000-4000-8000-000000000001',
          new Date('2026-01-02T03:04:05.678Z'),
          JSON.stringify({ a: [1, 'b'] }),
          Buffer.from([1, 2, 255]),
          ['a', 'b'],
          null,
        ],
      );
      expect(row).toEqual({
        int: 42,
        big: '9007199254740993',
        count: '1',
        numeric: '12.50',
        float: 2.5,
        bool: true,
        text: 'x',
        uuid: '00000000-0000-4000-8000-000000000001',
        at: new Date('2026-01-02T03:04:05.678Z'),
        day: '2026-01-02',
        time: '12:30:00',
        interval: '1 day 02:00:00',
        json: { a: [1, 'b'] },
        bytes: Buffer.from([1, 2, 255]),
        tags: ['a', 'b'],
        bigs: ['1', '9007199254740993'],
        days: ['2026-01-02'],
        nothing: null,
      });
      expect(Buffer.isBuffer(row?.bytes)).toBe(true);
    });

    it('returns the rows an insert returns, and none for a statement without any', async () => {
      const t = await table();
      expect(await database.query(`insert into ${t} (v) values ($1), ($2) returning v`, ['a', 'b'])).toEqual([{ v: 'a' }, { v: 'b' }]);
      expect(await database.query(`update ${t} set v = v || '!' where v = $1`, ['a'])).toEqual([]);
      expect(await values(t)).toEqual(['a!', 'b']);
    });

    it('refuses several statements in one query, running none of them', async () => {
      const t = await table();
      await expect(database.query(`insert into ${t} (v) values ('a'); insert into ${t} (v) values ('b')`)).rejects.toMatchObject({ code: '42601' });
      expect(await values(t)).toEqual([]);
    });

    it('runs a script of several statements', async () => {
      const t = await table();
      await database.exec(`insert into ${t} (v) values ('a');\ninsert into ${t} (v) values ('b');\nupdate ${t} set v = upper(v);`);
      expect(await values(t)).toEqual(['A', 'B']);
    });

    it('applies none of a script whose last statement fails', async () => {
      const t = await table();
      await expect(database.exec(`insert into ${t} (v) values ('a');\nselect * from no_such_table;`)).rejects.toMatchObject({ code: '42P01' });
      expect(await values(t)).toEqual([]);
    });

    it('commits a transaction when its function resolves, and returns what it returned', async () => {
      const t = await table();
      const result = await database.transaction(async (tx) => {
        await tx.query(`insert into ${t} (v) values ($1)`, ['a']);
        await tx.exec(`insert into ${t} (v) values ('b')`);
        return (await tx.query<{ n: string }>(`select count(*) as n from ${t}`))[0]?.n;
      });
      expect(result).toBe('2');
      expect(await values(t)).toEqual(['a', 'b']);
    });

    it('rolls back everything when the function throws, and rejects with what it threw', async () => {
      const t = await table();
      const failure = new Error('changed my mind');
      await expect(
        database.transaction(async (tx) => {
          await tx.query(`insert into ${t} (v) values ($1)`, ['a']);
          await tx.exec(`insert into ${t} (v) values ('b')`);
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await values(t)).toEqual([]);
    });

    it('rolls back a transaction whose statement fails', async () => {
      const t = await table();
      const run = database.transaction(async (tx) => {
        await tx.query(`insert into ${t} (v) values ($1)`, ['a']);
        await tx.query(`insert into ${t} (v) values ($1)`, ['a']);
      });
      await expect(run).rejects.toBeInstanceOf(Error);
      await expect(run).rejects.toMatchObject({ code: '23505' });
      expect(await values(t)).toEqual([]);
    });

    it('nests a transaction on the tx session: an outer throw undoes the nested part too', async () => {
      const t = await table();
      await expect(
        database.transaction(async (tx) => {
          await tx.query(`insert into ${t} (v) values ('outer')`);
          await tx.transaction((inner) => inner.query(`insert into ${t} (v) values ('inner')`));
          throw new Error('outer fails after the nested part committed');
        }),
      ).rejects.toThrow('outer fails');
      expect(await values(t)).toEqual([]);
    });

    it('nests a transaction on the tx session: a nested throw undoes only the nested part', async () => {
      const t = await table();
      await database.transaction(async (tx) => {
        await tx.query(`insert into ${t} (v) values ('outer')`);
        await tx
          .transaction(async (inner) => {
            await inner.query(`insert into ${t} (v) values ('inner')`);
            await inner.transaction((deepest) => deepest.query(`insert into ${t} (v) values ('deepest')`));
            throw new Error('nested part fails');
          })
          .catch(() => undefined);
        await tx.transaction((inner) => inner.query(`insert into ${t} (v) values ('second')`));
      });
      expect(await values(t)).toEqual(['outer', 'second']);
    });

    it('never lets two holders of one lock overlap', async () => {
      const key = `contract:${randomUUID()}`;
      const log: string[] = [];
      const hold = (who: string) =>
        database.withLock(key, async (session) => {
          log.push(`${who} in`);
          await session.query('select 1');
          await delay(50);
          log.push(`${who} out`);
          return who;
        });
      expect(await within(Promise.all([hold('a'), hold('b'), hold('c')]), SETTLE_BUDGET_MS, 'three holders')).toEqual(['a', 'b', 'c']);
      expect(log).toHaveLength(6);
      for (let i = 0; i < log.length; i += 2) expect(log[i + 1]).toBe(log[i]!.replace(' in', ' out'));
    });

    it('lets holders of different locks run at the same time', async () => {
      let inside = 0;
      let bothInside!: () => void;
      const together = new Promise<void>((resolve) => (bothInside = resolve));
      const hold = (key: string) =>
        database.withLock(key, async (session) => {
          if (++inside === 2) bothInside();
          await within(together, 5_000, `waiting inside ${key} for the other lock's holder`);
          return (await session.query<{ one: number }>('select 1 as one'))[0]?.one;
        });
      expect(await Promise.all([hold(`contract:${randomUUID()}`), hold(`contract:${randomUUID()}`)])).toEqual([1, 1]);
    });

    it('releases a lock whose holder throws, or whose statement fails', async () => {
      const key = `contract:${randomUUID()}`;
      const failure = new Error('holder failed');
      await expect(
        database.withLock(key, async () => {
          throw failure;
        }),
      ).rejects.toBe(failure);
      await expect(database.withLock(key, (session) => session.query('select * from no_such_table'))).rejects.toMatchObject({ code: '42P01' });
      expect(await within(database.withLock(key, async () => 'taken again'), 5_000, 'taking the released lock')).toBe('taken again');
    });

    it('runs transactions on the session of a lock', async () => {
      const t = await table();
      await database.withLock(`contract:${randomUUID()}`, async (session) => {
        await session.transaction((tx) => tx.query(`insert into ${t} (v) values ('kept')`));
        await session.transaction((tx) => tx.query(`insert into ${t} (v) values ('gone')`).then(() => Promise.reject(new Error('no')))).catch(() => undefined);
      });
      expect(await values(t)).toEqual(['kept']);
    });

    it('reports its server version', async () => {
      expect(await database.version()).toMatch(/^PostgreSQL \d+/);
    });

    it('rejects an SQL error with an Error carrying its SQLSTATE, and keeps answering', async () => {
      const missing = database.query('select * from no_such_table');
      await expect(missing).rejects.toBeInstanceOf(Error);
      await expect(missing).rejects.toMatchObject({ code: '42P01', message: expect.stringContaining('no_such_table') });
      await expect(database.query('select $1::int as n', ['not a number'])).rejects.toMatchObject({ code: '22P02' });
      await expect(database.exec('this is not sql')).rejects.toMatchObject({ code: '42601' });
      expect(await database.query('select 1 as one')).toEqual([{ one: 1 }]);
    });

    it('serves Prisma through its driver adapter, on the same data, and outlives its disconnect', async () => {
      const t = await table();
      const adapter = await (database.prismaAdapter() as PrismaAdapterFactory).connect();
      const result = await adapter.queryRaw({ sql: 'select $1::int4 + 1 as n', args: [41], argTypes: [{ scalarType: 'int', arity: 'scalar' }] });
      expect(result.columnNames).toEqual(['n']);
      expect(result.rows).toEqual([[42]]);
      expect(await adapter.executeRaw({ sql: `insert into ${t} (v) values ($1)`, args: ['via prisma'], argTypes: [{ scalarType: 'string', arity: 'scalar' }] })).toBe(1);
      await expect(adapter.queryRaw({ sql: 'select * from no_such_table', args: [], argTypes: [] })).rejects.toBeInstanceOf(Error);
      await adapter.dispose();
      expect(await values(t)).toEqual(['via prisma']);
    });

    it('rejects every call once closed, and closes twice without complaint', async () => {
      const closing = await open();
      expect(await closing.query('select 1 as one')).toEqual([{ one: 1 }]);
      await closing.close();
      await expect(closing.query('select 1')).rejects.toBeInstanceOf(Error);
      await expect(closing.exec('select 1')).rejects.toBeInstanceOf(Error);
      await expect(closing.transaction((tx) => tx.query('select 1'))).rejects.toBeInstanceOf(Error);
      await expect(closing.withLock('closed', (session) => session.query('select 1'))).rejects.toBeInstanceOf(Error);
      await expect(closing.version()).rejects.toBeInstanceOf(Error);
      await expect(closing.close()).resolves.toBeUndefined();
    });
  });
}

// PGlite in its worker thread, as `npm start` runs it.
databaseContract('pglite', () => openPGlite({ dataDir: 'memory://', logger: silentLogger() }));

if (REAL.databaseUrl) {
  const baseUrl = REAL.databaseUrl;
  /** A Postgres database of the test's own, dropped when it closes. */
  const openFresh = async (): Promise<Database & { url: string }> => {
    const fresh = await createTestDatabase(baseUrl);
    const database = openPostgres({ url: fresh.url, poolMax: 4, logger: silentLogger() });
    return {
      ...database,
      url: fresh.url,
      close: async () => {
        await database.close();
        await fresh.drop();
      },
    };
  };
  databaseContract('postgres', openFresh);

  describe('postgres database, against a server it shares', () => {
    let database: Database & { url: string };
    let admin: pg.Client;
    beforeAll(async () => {
      database = await openFresh();
      admin = new pg.Client({ connectionString: database.url });
      await admin.connect();
    });
    afterAll(async () => {
      await admin.end();
      await database.close();
    });

    it('excludes a holder of the same lock in another pool, as another replica would be', async () => {
      const replica = openPostgres({ url: database.url, poolMax: 2, logger: silentLogger() });
      try {
        const key = `contract:${randomUUID()}`;
        const log: string[] = [];
        let release!: () => void;
        const held = database.withLock(key, async () => {
          log.push('first in');
          await new Promise<void>((resolve) => (release = resolve));
          log.push('first out');
        });
        await delay(100);
        const second = replica.withLock(key, async () => void log.push('second in'));
        await delay(200);
        expect(log).toEqual(['first in']);
        release();
        await within(Promise.all([held, second]), 5_000, 'the second replica taking the lock');
        expect(log).toEqual(['first in', 'first out', 'second in']);
      } finally {
        await replica.close();
      }
    });

    it('rejects, without crashing the process, when the server ends a connection in the middle of a transaction', async () => {
      const run = database.transaction(async (tx) => {
        const [session] = await tx.query<{ pid: number }>('select pg_backend_pid() as pid');
        await admin.query('select pg_terminate_backend($1)', [session!.pid]);
        // The connection is checked out but idle here (a relay publishing to the bus, say).
        await delay(200);
        return tx.query('select 1');
      });
      await expect(run).rejects.toBeInstanceOf(Error);
      expect(await database.query('select 1 as one')).toEqual([{ one: 1 }]);
    });

    it('replaces an idle connection the server ended', async () => {
      const [session] = await database.query<{ pid: number }>('select pg_backend_pid() as pid');
      await admin.query('select pg_terminate_backend($1)', [session!.pid]);
      await delay(200);
      expect(await database.query('select 1 as one')).toEqual([{ one: 1 }]);
    });
  });
}
