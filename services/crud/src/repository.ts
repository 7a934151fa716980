import type { PrismaRawClient } from '@app/crud';
import { createPrismaClient, type Database } from '@app/platform';
import { PrismaClient } from './generated/prisma/client.js';

/** The Postgres schema the crud service owns: every domain's table and the outbox live in it. */
export const CRUD_SCHEMA = 'crud';

/**
 * The crud service's Prisma client, over the platform's database (pg pool or PGlite). The
 * generic repositories of @app/crud use its raw API; see libs/crud/src/repository.ts for why.
 */
export function createCrudPrisma(database: Database): PrismaRawClient & { $disconnect(): Promise<void> } {
  return createPrismaClient(PrismaClient, database);
}
