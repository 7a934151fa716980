import { mkdtemp, mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { migrate, migrateService, MigrationChecksumError, openPostgres, type Database } from '@app/platform';
import { createTestDatabase, openTestDependencies, REAL, silentLogger, testModes } from '@app/testing';

async function migrationsFolder(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
  for (const [name, sql] of Object.entries(files)) {
    await mkdir(join(dir, name));
    await writeFile(join(dir, name, 'migration.sql'), sql);
  }
  await writeFile(join(dir, 'migration_lock.toml'), 'provider = "postgresql"\n');
  return dir;
}

const FIRST = 'create table "shop"."item" (id serial primary key, name text not null);';
const SECOND = 'alter table "shop"."item" add column price numeric(10,2);\ninsert into "shop"."item" (name) values (\'seed\');';

/**
 * The outbox and idempotency migrations every service held before the kit owned the tables
 * (services/<name>/prisma/migrations/2026112{3,7}000000_*), as deployed databases recorded them.
 */
const FORMER_SERVICE_MIGRATIONS = {
  '20261123000000_outbox': `create table if not exists "shop"."_outbox" (
  seq bigserial primary key,
  id uuid not null unique,
  subject text not null,
  payload jsonb not null,
  created_at timestamptz not null default now()
);`,
  '20261127000000_idempotency': `create table "shop"."_idempotency" (
  scope text not null,
  key text not null,
  fingerprint text not null,
  status integer not null,
  body text not null,
  headers jsonb not null,
  created_at timestamptz not null default now(),
  primary key (scope, key)
);
create index "_idempotency_created_at_idx" on "shop"."_idempotency" (created_at);`,
};
const KIT = ['@app/platform/20261123000000_outbox', '@app/platform/20261127000000_idempotency'];

/** Each table of a schema with its columns (name type nullability default), and its indexes: what a migration left. */
async function shapeOf(database: Database, schema: string) {
  const columns = await database.query<{ table_name: string; column: string }>(
    `select table_name, column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') as column
     from information_schema.columns where table_schema = $1 order by table_name, ordinal_position`,
    [schema],
  );
  const indexes = await database.query<{ indexdef: string }>('select indexdef from pg_indexes where schemaname = $1 order by indexname', [schema]);
  return { columns, indexes: indexes.map((index) => index.indexdef) };
}

describe.each(testModes())('migrator (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  const logger = silentLogger();
  beforeEach(async () => {
    deps = await openTestDependencies(mode);
  });
  afterEach(async () => {
    await deps.dispose();
  });

  it('applies every migration of a fresh database in name order', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST, '20260102000000_price': SECOND });
    const result = await migrate(deps.database, { schema: 'shop', directory: dir, logger });
    expect(result).toEqual({ applied: ['20260101000000_init', '20260102000000_price'], skipped: [] });
    expect(await deps.database.query('select name, price from "shop"."item"')).toEqual([{ name: 'seed', price: null }]);
    const rows = await deps.database.query<{ name: string }>('select name from "shop"."_migrations" order by name');
    expect(rows.map((row) => row.name)).toEqual(['20260101000000_init', '20260102000000_price']);
  });

  it('creates only its bookkeeping table beside what the migrations create', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST });
    await migrate(deps.database, { schema: 'shop', directory: dir, logger });
    const tables = await deps.database.query<{ table_name: string }>(
      "select table_name from information_schema.tables where table_schema = 'shop' order by table_name",
    );
    expect(tables.map((table) => table.table_name)).toEqual(['_migrations', 'item']);
  });

  it('skips applied migrations when run again, and applies only new ones', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST });
    await migrate(deps.database, { schema: 'shop', directory: dir, logger });
    expect(await migrate(deps.database, { schema: 'shop', directory: dir, logger })).toEqual({ applied: [], skipped: ['20260101000000_init'] });
    await mkdir(join(dir, '20260102000000_price'));
    await writeFile(join(dir, '20260102000000_price', 'migration.sql'), SECOND);
    expect(await migrate(deps.database, { schema: 'shop', directory: dir, logger })).toEqual({
      applied: ['20260102000000_price'],
      skipped: ['20260101000000_init'],
    });
  });

  it('refuses to run when an applied migration was edited, and applies nothing', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST });
    await migrate(deps.database, { schema: 'shop', directory: dir, logger });
    await writeFile(join(dir, '20260101000000_init', 'migration.sql'), `${FIRST}\n-- edited`);
    await mkdir(join(dir, '20260102000000_price'));
    await writeFile(join(dir, '20260102000000_price', 'migration.sql'), SECOND);
    const run = migrate(deps.database, { schema: 'shop', directory: dir, logger });
    await expect(run).rejects.toBeInstanceOf(MigrationChecksumError);
    await expect(run).rejects.toThrow('Migration 20260101000000_init was edited after it was applied');
    expect(await deps.database.query('select name from "shop"."_migrations"')).toHaveLength(1);
  });

  it('rolls back a failing migration whole and records nothing for it', async () => {
    const dir = await migrationsFolder({
      '20260101000000_init': FIRST,
      '20260102000000_broken': 'insert into "shop"."item" (name) values (\'half\');\nselect * from no_such_table;',
    });
    await expect(migrate(deps.database, { schema: 'shop', directory: dir, logger })).rejects.toThrow(/no_such_table/);
    expect(await deps.database.query('select * from "shop"."item"')).toEqual([]);
    const rows = await deps.database.query<{ name: string }>('select name from "shop"."_migrations"');
    expect(rows.map((row) => row.name)).toEqual(['20260101000000_init']);
  });

  it('creates the kit tables a schema declares before its own migrations, which may use them', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': `${FIRST}\ninsert into "shop"."_outbox" (id, subject, payload) values (gen_random_uuid(), 'shop.init', '{}');` });
    const result = await migrate(deps.database, { schema: 'shop', directory: dir, kitTables: ['outbox', 'idempotency'], logger });
    expect(result).toEqual({ applied: [...KIT, '20260101000000_init'], skipped: [] });
    const tables = await deps.database.query<{ table_name: string }>(
      "select table_name from information_schema.tables where table_schema = 'shop' order by table_name",
    );
    expect(tables.map((table) => table.table_name)).toEqual(['_idempotency', '_migrations', '_outbox', 'item']);
    expect(await migrate(deps.database, { schema: 'shop', directory: dir, kitTables: ['outbox', 'idempotency'], logger })).toEqual({
      applied: [],
      skipped: [...KIT, '20260101000000_init'],
    });
  });

  it('upgrades a database whose own migrations created the kit tables, keeping their rows and that history', async () => {
    const before = await migrationsFolder({ '20260101000000_init': FIRST, ...FORMER_SERVICE_MIGRATIONS });
    await migrate(deps.database, { schema: 'shop', directory: before, logger });
    await deps.database.query(`insert into "shop"."_outbox" (id, subject, payload) values (gen_random_uuid(), 'shop.pending', '{}')`);
    const shape = await shapeOf(deps.database, 'shop');

    const after = await migrationsFolder({ '20260101000000_init': FIRST });
    const result = await migrate(deps.database, { schema: 'shop', directory: after, kitTables: ['outbox', 'idempotency'], logger });
    expect(result).toEqual({ applied: KIT, skipped: ['20260101000000_init'] });
    expect(await shapeOf(deps.database, 'shop')).toEqual(shape);
    expect(await deps.database.query('select subject from "shop"."_outbox"')).toEqual([{ subject: 'shop.pending' }]);
    const rows = await deps.database.query<{ name: string }>('select name from "shop"."_migrations" order by name collate "C"');
    expect(rows.map((row) => row.name)).toEqual(['20260101000000_init', ...Object.keys(FORMER_SERVICE_MIGRATIONS), ...KIT]);
  });

  it('gives a fresh schema the kit tables exactly as the former service migrations did', async () => {
    const former = await migrationsFolder(FORMER_SERVICE_MIGRATIONS);
    await migrate(deps.database, { schema: 'shop', directory: former, logger });
    await deps.database.exec('alter schema "shop" rename to "former"');
    await migrate(deps.database, { schema: 'shop', kitTables: ['outbox', 'idempotency'], logger });
    // Compared without the schema's name, which index definitions and sequence defaults carry.
    const unqualified = async (schema: string) => JSON.stringify(await shapeOf(deps.database, schema)).replaceAll(`${schema}.`, '');
    expect(await unqualified('shop')).toEqual(await unqualified('former'));
  });

  it('checks the schema after migrating, and fails with the check\'s error', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST });
    const seen: string[] = [];
    await migrate(deps.database, {
      schema: 'shop',
      directory: dir,
      logger,
      check: async (session) => {
        const columns = await session.query<{ column_name: string }>("select column_name from information_schema.columns where table_schema = 'shop' and table_name = 'item'");
        seen.push(...columns.map((column) => column.column_name));
      },
    });
    expect(seen.sort()).toEqual(['id', 'name']);
    const failing = migrate(deps.database, { schema: 'shop', directory: dir, logger, check: async () => Promise.reject(new Error('item lacks price')) });
    await expect(failing).rejects.toThrow('item lacks price');
  });

  it('migrates a service as it declares: the kit tables it uses, its folder, then its check', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST });
    const checked: string[] = [];
    const result = await migrateService(
      deps.database,
      { name: 'shop', migrations: dir, outbox: true, checkSchema: async (_session, schema) => void checked.push(schema) },
      logger,
    );
    expect(result).toEqual({ applied: [KIT[0], '20260101000000_init'], skipped: [] });
    expect(checked).toEqual(['shop']);
  });

  it('leaves the database untouched for a service without tables', async () => {
    expect(await migrateService(deps.database, { name: 'stateless' }, logger)).toBeUndefined();
    expect(await deps.database.query("select nspname from pg_namespace where nspname = 'stateless'")).toEqual([]);
  });

  it('applies each migration once when two runners start together', async () => {
    const dir = await migrationsFolder({ '20260101000000_init': FIRST, '20260102000000_price': SECOND });
    // Real mode: a second pool is a second "replica" racing on the advisory lock.
    const other: Database = mode === 'real' ? openPostgres({ url: deps.config.DATABASE_URL!, poolMax: 2, logger }) : deps.database;
    try {
      const results = await Promise.all([
        migrate(deps.database, { schema: 'shop', directory: dir, logger }),
        migrate(other, { schema: 'shop', directory: dir, logger }),
      ]);
      expect(results.flatMap((r) => r.applied).sort()).toEqual(['20260101000000_init', '20260102000000_price']);
      expect(await deps.database.query('select name from "shop"."item"')).toEqual([{ name: 'seed' }]);
    } finally {
      if (other !== deps.database) await other.close();
    }
  });
});

if (REAL.databaseUrl) {
  const baseUrl = REAL.databaseUrl;
  it('keeps two services apart in one database, each in its own schema', async () => {
    const db = await createTestDatabase(baseUrl);
    const database = openPostgres({ url: db.url, poolMax: 2, logger: silentLogger() });
    try {
      const a = await migrationsFolder({ '20260101000000_init': 'create table "one"."t" (id int);' });
      const b = await migrationsFolder({ '20260101000000_init': 'create table "two"."t" (id int);' });
      await migrate(database, { schema: 'one', directory: a, logger: silentLogger() });
      await migrate(database, { schema: 'two', directory: b, logger: silentLogger() });
      const schemas = await database.query<{ nspname: string }>("select nspname from pg_namespace where nspname in ('one', 'two') order by 1");
      expect(schemas.map((s) => s.nspname)).toEqual(['one', 'two']);
    } finally {
      await database.close();
      await db.drop();
    }
  });
}
