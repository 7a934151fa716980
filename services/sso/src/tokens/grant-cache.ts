import { createHmac, createSecretKey, randomBytes } from 'node:crypto';
import type { CredentialsClient, IdentityClient, InternalIdentity, VerifyApiKeyResponse } from '@app/contracts';
import { readSignInGeneration, type Bus, type Cache, type Logger, type Subscription } from '@app/platform';

/**
 * How long a cached decision is honoured at most when nothing drops it first: the platform's
 * revocation promise (1 s). Even with the shared cache and the bus both failing, a change
 * stops being honoured as fast as a revocation reaches the verifiers. At 1,000 grants a
 * second of one key, this still serves all but one grant a second from memory.
 */
export const GRANT_CACHE_TTL_MS = 1_000;
/** Entries per map at most (the oldest goes first): memory only, a dropped entry is one more read. */
const MAX_ENTRIES = 10_000;

/** Events that change what a cached decision was read from; `*.created` and sessions change none. */
const DROPPING_SUBJECTS = new Set(['credential.updated', 'credential.revoked', 'identity.updated', 'identity.deleted', 'revocation.subject', 'revocation.client']);

interface Entry<T> {
  value: T;
  /** The sign-in generation read before the value was. */
  generation: string;
  expiresAt: number;
}

export interface GrantCache {
  /** The clients the token endpoint uses: API keys and identities by id answered from memory when fresh. */
  credentials: CredentialsClient;
  identities: IdentityClient;
  /** Entries held (both maps), for tests. */
  readonly size: number;
  stop(): Promise<void>;
}

/**
 * A process-local cache of the two look-ups a client_credentials or refresh grant makes:
 * an API key's verdict (its credential, identity and roles) and an identity by id (roles,
 * activated). Only positive answers are cached: an unknown key, a deactivated credential or
 * identity always goes to credentials/identity, after the login throttle, as without a cache.
 *
 * An entry is served only while all of these hold, so a change is honoured as fast as today:
 * - the shared sign-in generation is the one read before the entry was filled: credentials
 *   and identity replace it after every change and before they answer, so the next grant,
 *   in any replica, reads the change itself;
 * - no credential, identity or revocation event arrived since (a broadcast: every replica
 *   hears each one; a bus reconnect drops everything, since events may have been missed);
 * - it is younger than GRANT_CACHE_TTL_MS.
 * When the shared cache cannot answer, nothing is cached or served from memory.
 *
 * Keys of API keys are an HMAC under a per-process random key: the map never holds the secret
 * itself, nor a hash that could be checked offline after a memory dump.
 */
export async function createGrantCache(options: {
  credentials: CredentialsClient;
  identities: IdentityClient;
  cache: Cache;
  bus: Bus;
  logger: Logger;
}): Promise<GrantCache> {
  const { credentials, identities, cache, bus, logger } = options;
  const keyOfSecret = createSecretKey(randomBytes(32));
  const apiKeys = new Map<string, Entry<VerifyApiKeyResponse>>();
  const byId = new Map<string, Entry<InternalIdentity | undefined>>();
  /** Bumped by every drop: a fill that saw a drop happen while it read does not store. */
  let drops = 0;

  const dropAll = () => {
    drops++;
    apiKeys.clear();
    byId.clear();
  };

  /** `read()` through `map`: served when fresh, else read and stored when `storable`. */
  const cached = async <T>(map: Map<string, Entry<T>>, key: string, read: () => Promise<T>, storable: (value: T) => boolean): Promise<T> => {
    const generation = await readSignInGeneration(cache);
    if (generation === undefined) return read();
    const entry = map.get(key);
    if (entry && entry.generation === generation && entry.expiresAt > Date.now()) return entry.value;
    const dropsBefore = drops;
    const value = await read();
    if (storable(value) && drops === dropsBefore) {
      map.delete(key);
      if (map.size >= MAX_ENTRIES) map.delete(map.keys().next().value!);
      map.set(key, { value, generation, expiresAt: Date.now() + GRANT_CACHE_TTL_MS });
    } else {
      map.delete(key);
    }
    return value;
  };

  const onEvent = async (message: { subject: string }) => {
    if (DROPPING_SUBJECTS.has(message.subject)) dropAll();
  };
  // Broadcasts, not a group: a work-sharing group would tell only one replica.
  const subscriptions: Subscription[] = await Promise.all(
    ['credential.>', 'identity.>', 'revocation.>'].map((pattern) => bus.subscribe(pattern, onEvent, { broadcast: true })),
  );
  const removeReconnect = bus.onReconnect(() => {
    logger.info('bus reconnected: cached sign-in decisions dropped');
    dropAll();
  });

  return {
    credentials: {
      ...credentials,
      verifyApiKey: (request) =>
        cached(apiKeys, createHmac('sha256', keyOfSecret).update(request.apiKey).digest('base64url'), () => credentials.verifyApiKey(request), (verdict) => verdict.valid),
    },
    identities: {
      ...identities,
      lookup: (query, authority) =>
        'id' in query ? cached(byId, query.id, () => identities.lookup(query, authority), (identity) => identity?.activated === true) : identities.lookup(query, authority),
    },
    get size() {
      return apiKeys.size + byId.size;
    },
    stop: async () => {
      removeReconnect();
      dropAll();
      await Promise.all(subscriptions.map((subscription) => subscription.unsubscribe()));
    },
  };
}
