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

export interface ClientRepository {
  insert(client: Omit<StoredClient, 'createdAt' | 'updatedAt'>): Promise<StoredClient>;
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
    insert: async (client) => stored(await prisma.oAuthClient.create({ data: client })),
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
