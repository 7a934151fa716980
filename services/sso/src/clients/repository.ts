import type { CreateGuard } from '@app/platform';
import type { PrismaClient } from '../generated/prisma/client.js';
import type { ClientGrantType, ClientType, Scope } from './schemas.js';

/** A registered client as sso keeps it; `secretHash` never leaves the service. */
export interface StoredClient {
  id: string;
  name: string;
  type: ClientType;
  secretHash: string | null;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: ClientGrantType[];
  scopes: Scope[];
  createdAt: Date;
  updatedAt: Date;
}

export type ClientSettings = Pick<StoredClient, 'name' | 'redirectUris' | 'postLogoutRedirectUris' | 'grantTypes' | 'scopes'>;

/** sso's Postgres schema: its tables, the outbox and the idempotency keys. */
export const SSO_SCHEMA = 'sso';

export interface ClientRepository {
  /** `guard` claims an Idempotency-Key first in the insert's transaction and keeps the answer last. */
  insert(client: Omit<StoredClient, 'createdAt' | 'updatedAt'>, guard?: CreateGuard<StoredClient>): Promise<StoredClient>;
  find(id: string): Promise<StoredClient | undefined>;
  list(page: { limit: number; offset: number }): Promise<StoredClient[]>;
  update(id: string, settings: ClientSettings): Promise<StoredClient | undefined>;
  delete(id: string): Promise<boolean>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function createClientRepository(prisma: PrismaClient): ClientRepository {
  const stored = (row: Awaited<ReturnType<typeof prisma.oAuthClient.create>>): StoredClient => ({
    ...row,
    type: row.type as ClientType,
    grantTypes: row.grantTypes as ClientGrantType[],
    scopes: row.scopes as Scope[],
  });
  return {
    insert: (client, guard) =>
      prisma.$transaction(async (tx) => {
        await guard?.claim(tx);
        const row = stored(await tx.oAuthClient.create({ data: client }));
        await guard?.remember(tx, row);
        return row;
      }),
    // A client_id that is not a UUID names no client (and must not reach a uuid column).
    find: async (id) => {
      if (!UUID.test(id)) return undefined;
      const row = await prisma.oAuthClient.findUnique({ where: { id } });
      return row ? stored(row) : undefined;
    },
    list: async ({ limit, offset }) => (await prisma.oAuthClient.findMany({ orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], take: limit, skip: offset })).map(stored),
    update: async (id, settings) => {
      const rows = await prisma.oAuthClient.updateManyAndReturn({ where: { id }, data: { ...settings, updatedAt: new Date() } });
      return rows[0] ? stored(rows[0]) : undefined;
    },
    delete: async (id) => (await prisma.oAuthClient.deleteMany({ where: { id } })).count === 1,
  };
}
