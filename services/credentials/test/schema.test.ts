import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createPrismaClient, enqueueEvent, migrateService } from '@app/platform';
import { openTestDependencies, testModes } from '@app/testing';
import { PrismaClient } from '../src/generated/prisma/client.js';
import { credentialsService } from '../src/index.js';

describe.each(testModes())('credentials schema.prisma and migrations (%s)', (mode) => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let prisma: InstanceType<typeof PrismaClient>;

  beforeAll(async () => {
    deps = await openTestDependencies(mode);
    await migrateService(deps.database, credentialsService, deps.logger);
    prisma = createPrismaClient(PrismaClient, deps.database);
  });
  afterAll(async () => {
    await prisma.$disconnect();
    await deps.dispose();
  });

  it('round-trips every field of a credential through Prisma on a freshly migrated database', async () => {
    const data = {
      identityId: randomUUID(),
      provider: 'API_KEY',
      type: 'API_KEY',
      secretHash: 'a'.repeat(64),
      keyPrefix: 'abcdefghijkl',
      keyHash: 'b'.repeat(64),
      subject: 'ci robot',
      activated: false,
      lastUsedAt: new Date('2026-01-02T03:04:05.678Z'),
    };
    const created = await prisma.credential.create({ data });
    expect(created).toMatchObject(data);
    expect(await prisma.credential.findUniqueOrThrow({ where: { keyPrefix: 'abcdefghijkl' } })).toEqual(created);
    expect(await prisma.credential.findUniqueOrThrow({ where: { keyHash: 'b'.repeat(64) } })).toEqual(created);
  });

  it('round-trips a server key, and refuses a second API key with the same keyed hash', async () => {
    const key = { name: 'probe', key: new Uint8Array([1, 2, 3]) };
    expect(await prisma.serverKey.create({ data: key })).toMatchObject(key);
    const data = { identityId: randomUUID(), provider: 'API_KEY', type: 'API_KEY', keyHash: 'c'.repeat(64) };
    await prisma.credential.create({ data });
    await expect(prisma.credential.create({ data })).rejects.toMatchObject({ code: 'P2002' });
  });

  it('enforces one LOCAL credential per identity, unique subjects per provider and the provider/type pairs', async () => {
    const identityId = randomUUID();
    await prisma.credential.create({ data: { identityId, provider: 'LOCAL', type: 'PASSWORD', secretHash: 'x' } });
    await expect(prisma.credential.create({ data: { identityId, provider: 'LOCAL', type: 'PASSWORD', secretHash: 'y' } })).rejects.toMatchObject({
      code: 'P2002',
    });
    await prisma.credential.create({ data: { identityId, provider: 'GITHUB', type: 'OAUTH', subject: '42' } });
    await expect(
      prisma.credential.create({ data: { identityId: randomUUID(), provider: 'GITHUB', type: 'OAUTH', subject: '42' } }),
    ).rejects.toMatchObject({ code: 'P2002' });
    await expect(prisma.credential.create({ data: { identityId, provider: 'GOOGLE', type: 'PASSWORD', subject: '7' } })).rejects.toThrow();
  });

  it('creates the outbox its events go through', async () => {
    const id = await prisma.$transaction((tx) => enqueueEvent(tx, 'credentials', 'credential.created', { probe: true }));
    expect(await deps.database.query('select id, subject, payload from "credentials"."_outbox"')).toEqual([{ id, subject: 'credential.created', payload: { probe: true } }]);
  });
});
