import {
  LIVE_REVOCATIONS_REQUEST,
  liveRevocationsPageSchema,
  REVOCATION_SUBJECTS,
  revocationEventSchema,
  type AccessTokenClaims,
  type LiveRevocationsPage,
  type LiveRevocationsRequest,
  type RevocationEvent,
} from '@app/contracts';
import { NoResponderError, type Bus, type Subscription } from '../bus/bus.js';
import type { DependencyCheck } from '../health/checks.js';
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
/**
 * While the token issuer cannot answer (down, unreachable, its database down), seeding is retried, soon at
 * first (a process started beside it is ready once it is) and then at most this often.
 */
const SEED_RETRY_MAX_MS = 2_000;
const SEED_RETRY_FIRST_MS = 250;

/**
 * Where a verifier reads the live revocations, a page at a time: the token issuer's own record (its
 * database), in process where the issuer runs in this process, over the bus everywhere else.
 */
export type RevocationSource = (request: LiveRevocationsRequest) => Promise<LiveRevocationsPage>;

/** The issuer's record over the bus: whichever of its replicas answers LIVE_REVOCATIONS_REQUEST. */
export function busRevocationSource(bus: Bus): RevocationSource {
  return async (request) => {
    try {
      return liveRevocationsPageSchema.parse(await bus.request(LIVE_REVOCATIONS_REQUEST, request));
    } catch (error) {
      // An in-process bus reaches no other process: with no issuer on it there is none to ask,
      // and no revocation to hear either (a service run alone in a test).
      if (bus.kind === 'local' && error instanceof NoResponderError) return { revocations: [] };
      throw error;
    }
  };
}

export interface RevocationFeed {
  /** Whether the set was seeded from the token issuer once: until then the process must not be ready. */
  readonly seeded: boolean;
  /** Reads every live revocation from the source into the set; false when it could not. */
  seed(): Promise<boolean>;
  stop(): Promise<void>;
}

/** Parses one published revocation; undefined (logged) when it is not one. */
function revocationOf(data: unknown, logger: Logger): RevocationEvent | undefined {
  const parsed = revocationEventSchema.safeParse(data);
  if (parsed.success) return parsed.data;
  logger.warn('ignoring a revocation that does not match its schema');
  return undefined;
}

/**
 * Keeps `set` current for one process: seeded from the token issuer's record of live revocations (the
 * cache holds none: a cache restarted empty forgets nothing), then fed by the issuer's broadcast on
 * the bus, and re-seeded each time the bus reconnects, which catches up whatever was
 * published while it was down. Entries only ever grow a cut-off, so a seed and events applied
 * in any order give the same set. Resolves once the first seed was tried: a verifier that
 * starts after a revocation refuses the token from its first request. While the issuer cannot
 * answer, seeding is retried in the background and `seeded` stays false.
 */
export async function startRevocationFeed(options: {
  set: RevocationSet;
  source: RevocationSource;
  bus: Bus;
  logger: Logger;
}): Promise<RevocationFeed> {
  const { set, source, bus, logger } = options;
  let stopped = false;
  let seeded = false;
  let failing = false;
  let retry: NodeJS.Timeout | undefined;

  const seed = async (): Promise<boolean> => {
    try {
      let request: LiveRevocationsRequest = {};
      for (;;) {
        const page = await source(request);
        for (const event of page.revocations) set.apply(event);
        if (!page.next) break;
        request = { after: page.next };
      }
    } catch (error) {
      // Said once per outage, not once per retry.
      if (!failing) logger.warn({ err: error }, 'revocations could not be read from the token issuer; retrying');
      failing = true;
      return false;
    }
    if (failing) logger.info('revocations read from the token issuer again');
    failing = false;
    seeded = true;
    return true;
  };
  let retryMs = SEED_RETRY_FIRST_MS;
  const seedUntilDone = async () => {
    clearTimeout(retry);
    if (stopped) return;
    if (await seed()) {
      retryMs = SEED_RETRY_FIRST_MS;
      return;
    }
    if (stopped) return;
    retry = setTimeout(() => void seedUntilDone(), retryMs);
    retry.unref();
    retryMs = Math.min(retryMs * 2, SEED_RETRY_MAX_MS);
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
    get seeded() {
      return seeded;
    },
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

/** Readiness: a verifier that could not read the issuer's revocations yet may accept a revoked token. */
export const revocationsCheck = (feed: () => RevocationFeed | undefined): DependencyCheck => ({
  required: true,
  probe: async () => {
    if (!feed()?.seeded) throw new Error('revocations not read from the token issuer yet');
    return {};
  },
});
