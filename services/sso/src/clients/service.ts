import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { createCacheAside, guardRows, type Cache, type CountPreference, type CreateGuard, type FilteredPage, type Logger, type Page } from '@app/platform';
import { clientNotFound } from './errors.js';
import type { ClientRepository, StoredClient } from './repository.js';
import type { ClientRecord, CreateClientBody, UpdateClientBody } from './schemas.js';

/** 256 random bits: a secret nobody can guess, so one SHA-256 is a sound lookup key (no stretching). */
const CLIENT_SECRET_BYTES = 32;
/**
 * Seconds a client's stamp lives in the shared cache (see `find`); one that expires costs one
 * database read in each replica.
 */
const CLIENT_STAMP_TTL_SECONDS = 600;
/** Registered clients are few; a bound keeps a flood of made-up client_ids from growing the map. */
const CLIENT_CACHE_ENTRIES = 1_000;

const hashSecret = (secret: string) => createHash('sha256').update(secret).digest();

/** What the API shows of a client: everything but its secret's hash. */
export const clientRecordOf = (client: StoredClient): ClientRecord => ({
  id: client.id,
  name: client.name,
  type: client.type,
  redirect_uris: client.redirectUris,
  post_logout_redirect_uris: client.postLogoutRedirectUris,
  grant_types: client.grantTypes,
  scopes: client.scopes,
  createdAt: client.createdAt.toISOString(),
  updatedAt: client.updatedAt.toISOString(),
});

/** A client just registered, with its secret when confidential (the one time it is known). */
export interface CreatedClient {
  client: StoredClient;
  secret?: string;
}

export interface ClientService {
  /**
   * Registers a client; a confidential one's secret is in the answer, and nowhere ever again.
   * `guard` runs in the insert's transaction (an Idempotency-Key).
   */
  create(body: CreateClientBody, guard?: CreateGuard<CreatedClient>): Promise<CreatedClient>;
  get(id: string): Promise<StoredClient>;
  list(page: Page, count: CountPreference | undefined): Promise<FilteredPage<StoredClient>>;
  update(id: string, body: UpdateClientBody): Promise<StoredClient>;
  delete(id: string): Promise<void>;
  /** The client `id` names, or undefined (an unknown or malformed id alike). */
  find(id: string): Promise<StoredClient | undefined>;
  /** Whether `secret` is the confidential client's secret (constant time; false for a public client). */
  secretMatches(client: StoredClient, secret: string): boolean;
}

/**
 * Every sign-in reads its client two or three times (authorize, the form, the token endpoint):
 * a replica answers those look-ups from memory while the client's stamp in the shared cache is
 * the one it read before loading the client. A change deletes the stamp after it committed and
 * before it is answered, so a look-up after that answer, in any replica, loads the client again
 * (see createCacheAside). When the shared cache cannot answer, every look-up reads the database.
 */
export function createClientService(repository: ClientRepository, shared: { cache: Cache; logger: Logger }): ClientService {
  const aside = createCacheAside({ ...shared, ttlSeconds: CLIENT_STAMP_TTL_SECONDS, name: 'oauth clients' });
  const stampKey = (id: string) => `sso:client:${id}`;
  const recent = new Map<string, { client: StoredClient; stamp: string }>();
  const remember = (client: StoredClient, stamp: string) => {
    recent.delete(client.id);
    if (recent.size >= CLIENT_CACHE_ENTRIES) recent.delete(recent.keys().next().value!);
    recent.set(client.id, { client, stamp });
  };
  const changed = async (id: string) => {
    recent.delete(id);
    await aside.invalidate(stampKey(id));
  };
  const settingsOf = (body: UpdateClientBody) => ({
    name: body.name,
    redirectUris: body.redirect_uris,
    postLogoutRedirectUris: body.post_logout_redirect_uris,
    grantTypes: [...new Set(body.grant_types)],
    scopes: [...new Set(body.scopes)],
  });
  return {
    create: async (body, guard) => {
      const secret = body.type === 'confidential' ? randomBytes(CLIENT_SECRET_BYTES).toString('base64url') : undefined;
      const created = (client: StoredClient): CreatedClient => ({ client, ...(secret !== undefined && { secret }) });
      const client = await repository.insert(
        { id: randomUUID(), type: body.type, secretHash: secret === undefined ? null : hashSecret(secret).toString('hex'), ...settingsOf(body) },
        guardRows(guard, created),
      );
      return created(client);
    },
    get: async (id) => (await repository.find(id)) ?? Promise.reject(clientNotFound(id)),
    list: (page, count) => repository.list(page, count),
    update: async (id, body) => {
      const client = await repository.update(id, settingsOf(body));
      if (!client) throw clientNotFound(id);
      await changed(id);
      return client;
    },
    delete: async (id) => {
      if (!(await repository.delete(id))) throw clientNotFound(id);
      await changed(id);
    },
    // Only clients that exist are remembered, and stamped: an unknown id (the authorize page
    // is public) is asked of the database each time and writes nothing to the shared cache.
    find: async (id) => {
      const cached = recent.get(id);
      if (!cached && !(await repository.find(id))) return undefined;
      const stamp = await aside.stamp(stampKey(id));
      if (stamp !== undefined && cached?.stamp === stamp) return cached.client;
      // Loaded after the stamp was read: what a later change's delete of the stamp covers.
      const client = await repository.find(id);
      if (client && stamp !== undefined) remember(client, stamp);
      else recent.delete(id);
      return client;
    },
    secretMatches: (client, secret) => {
      if (client.secretHash === null) return false;
      // Both sides are 32-byte digests: equal lengths, so the comparison itself leaks nothing.
      return timingSafeEqual(hashSecret(secret), Buffer.from(client.secretHash, 'hex'));
    },
  };
}
