import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { clientNotFound } from './errors.js';
import type { ClientRepository, StoredClient } from './repository.js';
import type { ClientRecord, CreateClientBody, UpdateClientBody } from './schemas.js';

/** 256 random bits: a secret nobody can guess, so one SHA-256 is a sound lookup key (no stretching). */
const CLIENT_SECRET_BYTES = 32;

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

export interface ClientService {
  /** Registers a client; a confidential one's secret is in the answer, and nowhere ever again. */
  create(body: CreateClientBody): Promise<{ client: StoredClient; secret?: string }>;
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
  const settingsOf = (body: UpdateClientBody) => ({
    name: body.name,
    redirectUris: body.redirect_uris,
    postLogoutRedirectUris: body.post_logout_redirect_uris,
    grantTypes: [...new Set(body.grant_types)],
    scopes: [...new Set(body.scopes)],
  });
  return {
    create: async (body) => {
      const secret = body.type === 'confidential' ? randomBytes(CLIENT_SECRET_BYTES).toString('base64url') : undefined;
      const client = await repository.insert({
        id: randomUUID(),
        type: body.type,
        secretHash: secret === undefined ? null : hashSecret(secret).toString('hex'),
        ...settingsOf(body),
      });
      return { client, ...(secret !== undefined && { secret }) };
    },
    get: async (id) => (await repository.find(id)) ?? Promise.reject(clientNotFound(id)),
    list: (page) => repository.list(page),
    update: async (id, body) => (await repository.update(id, settingsOf(body))) ?? Promise.reject(clientNotFound(id)),
    delete: async (id) => {
      if (!(await repository.delete(id))) throw clientNotFound(id);
    },
    find: (id) => repository.find(id),
    secretMatches: (client, secret) => {
      if (client.secretHash === null) return false;
      // Both sides are 32-byte digests: equal lengths, so the comparison itself leaks nothing.
      return timingSafeEqual(hashSecret(secret), Buffer.from(client.secretHash, 'hex'));
    },
  };
}
