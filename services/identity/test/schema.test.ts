import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPrismaClient, enqueueEvent, migrateService } from '@app/platform';
import { openTestDependencies, testModes } from '@app/testing';
import { PrismaClient } from '../src/generated/prisma/client.js';
import { identityService } from '../src/index.js';

describe.each(testModes())('identity schema.prisma and migrations (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let prisma: InstanceType<typeof PrismaClient>;

  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    await migrateService(deps.database, identityService, deps.logger);
    prisma = createPrismaClient(PrismaClient, deps.database);
  });
  afterAll(async () => {
    await prisma.$disconnect();
    await deps.dispose();
  });

  it('round-trips every field of an identity through Prisma on a freshly migrated database', async () => {
    const created = await prisma.identity.create({
      data: { name: 'Ada', email: 'ada@example.com', avatar: 'https://example.com/a.png', roles: ['admin'] },
    });
    expect(created).toMatchObject({ name: 'Ada', email: 'ada@example.com', avatar: 'https://example.com/a.png', roles: ['admin'], activated: true });
    const read = await prisma.identity.findUniqueOrThrow({ where: { email: 'ada@example.com' } });
    expect(read).toEqual(created);
    const updated = await prisma.identity.update({ where: { id: created.id }, data: { activated: false, avatar: null, roles: [] } });
    expect(updated).toMatchObject({ activated: false, avatar: null, roles: [] });
  });

  it('keeps emails unique and lower-cased in the database itself', async () => {
    await prisma.identity.create({ data: { name: 'B', email: 'b@example.com' } });
    await expect(prisma.identity.create({ data: { name: 'B2', email: 'b@example.com' } })).rejects.toMatchObject({ code: 'P2002' });
    await expect(prisma.identity.create({ data: { name: 'C', email: 'C@example.com' } })).rejects.toThrow();
  });

  it('creates the outbox its events go through', async () => {
    const id = await prisma.$transaction((tx) => enqueueEvent(tx, 'identity', 'identity.created', { probe: true }));
    expect(await deps.database.query('select id, subject, payload from "identity"."_outbox"')).toEqual([{ id, subject: 'identity.created', payload: { probe: true } }]);
  });
});
