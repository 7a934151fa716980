import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { guardRows, type CreateGuard } from '@app/platform';
import { clientNotFound } from './errors.js';
import type { ClientRepository, StoredClient } from './repository.js';
import type { ClientRecord, CreateClientBody, UpdateClientBody } from './schemas.js';

/** 256 random bits: a secret nobody can guess, so one SHA-256 is a sound lookup key (no stretching). */
const CLIENT_SECRET_BYTES = 32;
/**
 * How long a replica answers a client lookup from memory. Every sign-in reads its client two or
 * three times (authorize, the form, the token endpoint); a change made through this replica is
 * seen at once, one made through another replica within this time.
 */
const CLIENT_CACHE_MS = 5_000;
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
  list(page: { limit: number; offset: number }): Promise<StoredClient[]>;
  update(id: string, body: UpdateClientBody): Promise<StoredClient>;
  delete(id: string): Promise<void>;
  /** The client `id` names, or undefined (an unknown or malformed id alike). */
  find(id: string): Promise<StoredClient | undefined>;
  /** Whether `secret` is the confidential client's secret (constant time; false for a public client). */
  secretMatches(client: StoredClient, secret: string): boolean;
}

export function createClientService(repository: ClientRepository): ClientService {
  const recent = new Map<string, { client: StoredClient; until: number }>();
  const remember = (client: StoredClient) => {
    if (recent.size >= CLIENT_CACHE_ENTRIES) recent.delete(recent.keys().next().value!);
    recent.set(client.id, { client, until: Date.now() + CLIENT_CACHE_MS });
    return client;
  };
  const forget = (id: string) => recent.delete(id);
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
    list: (page) => repository.list(page),
    update: async (id, body) => {
      forget(id);
      return (await repository.update(id, settingsOf(body))) ?? Promise.reject(clientNotFound(id));
    },
    delete: async (id) => {
      forget(id);
      if (!(await repository.delete(id))) throw clientNotFound(id);
    },
    // Only clients that exist are remembered: an unknown id is asked again each time.
    find: async (id) => {
      const cached = recent.get(id);
      if (cached && cached.until > Date.now()) return cached.client;
      const client = await repository.find(id);
      if (client) return remember(client);
      forget(id);
      return undefined;
    },
    secretMatches: (client, secret) => {
      if (client.secretHash === null) return false;
      // Both sides are 32-byte digests: equal lengths, so the comparison itself leaks nothing.
      return timingSafeEqual(hashSecret(secret), Buffer.from(client.secretHash, 'hex'));
    },
  };
}
