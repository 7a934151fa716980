import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { checkDomainTables, DomainTableMismatchError } from '@app/crud';
import { createPrismaClient, enqueueEvent, migrateService } from '@app/platform';
import { openTestDependencies, testModes } from '@app/testing';
import { PrismaClient } from '../src/generated/prisma/client.js';
import { crudService, DOMAINS, post, product } from '../src/index.js';

/**
 * The domains are declared once (src/domains/*.ts); the migrations make their tables, and the
 * migrator holds those to the declarations (checkDomainTables) every time it runs.
 */
describe.each(testModes())('the crud schema: migrations held to the domain declarations (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let prisma: PrismaClient;
  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    await migrateService(deps.database, crudService, deps.logger);
    prisma = createPrismaClient(PrismaClient, deps.database);
  });
  afterAll(async () => {
    await prisma.$disconnect();
    await deps.dispose();
  });

  it('serves every domain file of src/domains, and nothing else', () => {
    expect(DOMAINS).toEqual([post, product]);
  });

  it('gives every domain the table its declaration needs', async () => {
    await expect(checkDomainTables(deps.database, 'crud', DOMAINS)).resolves.toBeUndefined();
  });

  it('refuses to start on a table that drifted from its declaration, naming the domain, the column and the fix', async () => {
    await deps.database.exec('alter table "crud"."product" alter column "stock" type bigint');
    try {
      const start = migrateService(deps.database, crudService, deps.logger);
      await expect(start).rejects.toBeInstanceOf(DomainTableMismatchError);
      await expect(start).rejects.toThrow(
        '- domain "product": column "stock" of "crud"."product" is bigint, not integer\n' +
          '    fix: alter table "crud"."product" alter column "stock" type integer;',
      );
    } finally {
      await deps.database.exec('alter table "crud"."product" alter column "stock" type integer');
    }
  });

  it('creates the outbox its events go through', async () => {
    const id = await prisma.$transaction((tx) => enqueueEvent(tx, 'crud', 'crud.product.created', { probe: true }));
    expect(await deps.database.query('select id, subject, payload from "crud"."_outbox"')).toEqual([{ id, subject: 'crud.product.created', payload: { probe: true } }]);
  });
});
