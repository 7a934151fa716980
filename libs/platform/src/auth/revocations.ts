import {
  REVOCATION_SUBJECTS,
  REVOCATIONS_CACHE_KEY,
  revocationEventSchema,
  type AccessTokenClaims,
  type RevocationEvent,
} from '@app/contracts';
import type { Bus, Subscription } from '../bus/bus.js';
import type { Cache } from '../cache/cache.js';
import type { Logger } from '../logger.js';

/** A cut-off: tokens issued (`iat`) before `issuedBefore` are revoked, until `expiresAt`. */
interface CutOff {
  issuedBefore: number;
  expiresAt: number;
}

/**
 * The revocations one process knows of, in memory: by session (`sid`), and by subject or API
 * key (`client_id`) with an issued-before cut-off. `isRevoked` is three Map look-ups and a few
 * number comparisons, whatever the number of entries, and allocates nothing: it runs on every
 * authenticated request, after the verified-token cache.
 */
export interface RevocationSet {
  apply(event: RevocationEvent): void;
  isRevoked(claims: AccessTokenClaims): boolean;
  /** Entries held (expired ones included until the next prune). */
  readonly size: number;
  /** Drops every entry whose tokens have all expired. */
  prune(): void;
}

export function createRevocationSet(): RevocationSet {
  /** sid -> expiresAt (epoch seconds). */
  const sessions = new Map<string, number>();
  const subjects = new Map<string, CutOff>();
  const clients = new Map<string, CutOff>();

  const addCutOff = (map: Map<string, CutOff>, id: string, issuedBefore: number, expiresAt: number) => {
    const current = map.get(id);
    if (current) {
      current.issuedBefore = Math.max(current.issuedBefore, issuedBefore);
      current.expiresAt = Math.max(current.expiresAt, expiresAt);
    } else {
      map.set(id, { issuedBefore, expiresAt });
    }
  };
  const cutsOff = (cutOff: CutOff | undefined, iat: number) => cutOff !== undefined && iat < cutOff.issuedBefore;

  return {
    apply: (event) => {
      if (event.kind === 'session') {
        sessions.set(event.id, Math.max(sessions.get(event.id) ?? 0, event.expiresAt));
      } else {
        // A cut-off without a time revokes everything issued until the entry expires.
        addCutOff(event.kind === 'subject' ? subjects : clients, event.id, event.issuedBefore ?? event.expiresAt, event.expiresAt);
      }
    },
    // No expiry check here: an entry outlives every token it matches, so a stale one can only
    // match a token that `exp` already refuses.
    isRevoked: (claims) =>
      (claims.sid !== undefined && sessions.has(claims.sid)) ||
      cutsOff(subjects.get(claims.sub), claims.iat) ||
      (claims.client_id !== undefined && cutsOff(clients.get(claims.client_id), claims.iat)),
    get size() {
      return sessions.size + subjects.size + clients.size;
    },
    prune: () => {
      const now = Math.floor(Date.now() / 1000);
      for (const [sid, expiresAt] of sessions) if (expiresAt <= now) sessions.delete(sid);
      for (const map of [subjects, clients]) for (const [id, cutOff] of map) if (cutOff.expiresAt <= now) map.delete(id);
    },
  };
}

/** How often expired entries are dropped: memory only; an expired entry never changes an answer. */
const PRUNE_INTERVAL_MS = 60_000;
/** While the cache cannot be read (Redis down at start), seeding is retried this often. */
const SEED_RETRY_MS = 2_000;

export interface RevocationFeed {
  /** Reads every live revocation from the cache into the set (at start, after a reconnect). */
  seed(): Promise<boolean>;
  stop(): Promise<void>;
}

/** Parses one stored or published revocation; undefined (logged) when it is not one. */
function revocationOf(data: unknown, logger: Logger): RevocationEvent | undefined {
  const parsed = revocationEventSchema.safeParse(data);
  if (parsed.success) return parsed.data;
  logger.warn('ignoring a revocation that does not match its schema');
  return undefined;
}

/**
 * Keeps `set` current for one process: seeded from the cache (where sso records every
 * revocation until its tokens expire), then fed by sso's broadcast on the bus, and re-seeded
 * each time the bus reconnects, which catches up whatever was published while it was down.
 * Resolves once the first seed was tried: a verifier that starts after a revocation refuses
 * the token from its first request. A cache that cannot be read is retried in the background.
 */
export async function startRevocationFeed(options: { set: RevocationSet; cache: Cache; bus: Bus; logger: Logger }): Promise<RevocationFeed> {
  const { set, cache, bus, logger } = options;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  const seed = async (): Promise<boolean> => {
    try {
      const members = await cache.liveMembers(REVOCATIONS_CACHE_KEY);
      for (const member of members) {
        let data: unknown;
        try {
          data = JSON.parse(member);
        } catch {
          data = undefined;
        }
        const event = revocationOf(data, logger);
        if (event) set.apply(event);
      }
      return true;
    } catch (error) {
      logger.warn({ err: error }, 'revocations could not be read from the cache; retrying');
      return false;
    }
  };
  const seedUntilDone = async () => {
    clearTimeout(retry);
    if (stopped || (await seed())) return;
    retry = setTimeout(() => void seedUntilDone(), SEED_RETRY_MS);
    retry.unref();
  };

  const subscription: Subscription = await bus.subscribe(
    REVOCATION_SUBJECTS,
    async (message) => {
      const event = revocationOf(message.data, logger);
      if (event) set.apply(event);
    },
    { broadcast: true },
  );
  const removeReconnect = bus.onReconnect(() => void seedUntilDone());
  const prune = setInterval(() => set.prune(), PRUNE_INTERVAL_MS);
  prune.unref();
  await seedUntilDone();

  return {
    seed,
    stop: async () => {
      stopped = true;
      clearTimeout(retry);
      clearInterval(prune);
      removeReconnect();
      await subscription.unsubscribe();
    },
  };
}
