import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPrismaClient, enqueueEvent, migrate } from '@app/platform';
import { openTestDependencies, testModes } from '@app/testing';
import { PrismaClient } from '../src/generated/prisma/client.js';
import { crudService, DOMAINS } from '../src/index.js';

/**
 * schema.prisma and the hand-written migrations must describe the same tables: every model
 * round-trips through Prisma on a freshly migrated database, and every domain definition's
 * fields, unique columns and indexes exist there.
 */
describe.each(testModes())('schema.prisma, migrations and domain definitions agree (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let prisma: PrismaClient;
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    await migrate(deps.database, { schema: 'crud', directory: crudService.migrations!, logger: deps.logger });
    prisma = createPrismaClient(PrismaClient, deps.database);
  });
  afterAll(async () => {
    await prisma.$disconnect();
    await deps.dispose();
  });

  it('round-trips a product through the Prisma model', async () => {
    const data = { name: 'Soap', price: '12345678.91', description: 'Lavender', stock: 2147483647, category: 'Hygiene', perishable: false };
    const created = await prisma.product.create({ data });
    const read = await prisma.product.findUniqueOrThrow({ where: { id: created.id } });
    expect({ ...read, price: read.price.toString() }).toEqual({
      ...data,
      id: created.id,
      activated: true,
      createdAt: created.createdAt,
      updatedAt: created.updatedAt,
    });
  });

  it('round-trips a post through the Prisma model, with its unique slug', async () => {
    const data = { title: 'A title', content: 'Some content here', authorId: 'x'.repeat(36), slug: 'a-slug' };
    const created = await prisma.post.create({ data });
    expect(await prisma.post.findUniqueOrThrow({ where: { slug: 'a-slug' } })).toEqual({ ...created, ...data, activated: true });
    await expect(prisma.post.create({ data })).rejects.toMatchObject({ code: 'P2002' });
  });

  it.each(DOMAINS.map((domain) => [domain.name, domain] as const))('has the columns and indexes the %s definition declares', async (_name, domain) => {
    const columns = await deps.database.query<{ column_name: string }>(
      `select column_name from information_schema.columns where table_schema = 'crud' and table_name = $1 order by ordinal_position`,
      [domain.table],
    );
    expect(columns.map((column) => column.column_name)).toEqual([...domain.fields]);
    const indexes = await deps.database.query<{ indexdef: string }>(`select indexdef from pg_indexes where schemaname = 'crud' and tablename = $1`, [
      domain.table,
    ]);
    const definitions = indexes.map((index) => index.indexdef.replace(/"/g, ''));
    for (const column of domain.indexes) expect(definitions).toContainEqual(expect.stringMatching(new RegExp(`\\(${column}, id\\)$`)));
    for (const column of domain.unique) expect(definitions).toContainEqual(expect.stringMatching(new RegExp(`^CREATE UNIQUE INDEX .*\\(${column}\\)$`)));
    expect(definitions).toContainEqual(expect.stringMatching(/\(createdAt, id\)$/));
  });

  it('creates the outbox its events go through', async () => {
    const id = await prisma.$transaction((tx) => enqueueEvent(tx, 'crud', 'crud.product.created', { probe: true }));
    expect(await deps.database.query('select id, subject, payload from "crud"."_outbox"')).toEqual([{ id, subject: 'crud.product.created', payload: { probe: true } }]);
  });
});
