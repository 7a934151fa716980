import { isUuid, readFilteredPage, type CountPreference, type CreateGuard, type FilteredPage, type FilteredTable, type Page } from '@app/platform';
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
  list(page: Page, count: CountPreference | undefined): Promise<FilteredPage<StoredClient>>;
  update(id: string, settings: ClientSettings): Promise<StoredClient | undefined>;
  delete(id: string): Promise<boolean>;
}

/** The client table as its list reads it: rows shaped as Prisma's, and the columns a list sorts on. */
const CLIENT_TABLE: FilteredTable = {
  from: '"sso"."oauth_client"',
  select:
    'id, name, type, secret_hash as "secretHash", redirect_uris as "redirectUris", post_logout_redirect_uris as "postLogoutRedirectUris", ' +
    'grant_types as "grantTypes", scopes, created_at as "createdAt", updated_at as "updatedAt"',
  columns: {
    id: { column: 'id', type: 'uuid' },
    name: { column: 'name', type: 'text' },
    createdAt: { column: 'created_at', type: 'timestamptz' },
    updatedAt: { column: 'updated_at', type: 'timestamptz' },
  },
};

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
      if (!isUuid(id)) return undefined;
      const row = await prisma.oAuthClient.findUnique({ where: { id } });
      return row ? stored(row) : undefined;
    },
    list: async (page, count) => {
      const found = await readFilteredPage<Parameters<typeof stored>[0]>(prisma, CLIENT_TABLE, {}, page, count);
      return { ...found, rows: found.rows.map(stored) };
    },
    update: async (id, settings) => {
      const rows = await prisma.oAuthClient.updateManyAndReturn({ where: { id }, data: { ...settings, updatedAt: new Date() } });
      return rows[0] ? stored(rows[0]) : undefined;
    },
    delete: async (id) => (await prisma.oAuthClient.deleteMany({ where: { id } })).count === 1,
  };
}
