import { REVOCATION_SUBJECTS } from '@app/contracts';
import { bumpGeneration, readGenerations, type Bus, type Cache, type GenerationKey, type Logger, type Subscription } from '@app/platform';
import type { LiveRefreshToken, RefreshTokenRepository } from './repository.js';

/**
 * How long a live refresh token's introspection is answered from memory at most when nothing
 * drops it first: the platform's revocation promise (1 s, as the grant cache's). A resource
 * server introspecting one token a thousand times a second costs one database read a second.
 */
export const LIVE_CACHE_TTL_MS = 1_000;
/** Tokens held at most (the oldest goes first): memory only, a dropped entry is one more read. */
const MAX_ENTRIES = 10_000;

/**
 * The generations (platform cache/generations.ts) an entry is served under: one that every
 * revocation replaces, and one per token that its rotation replaces. A token's key lives a
 * minute from when it was made or replaced (far longer than any entry: one missing is made
 * afresh, and entries under the old value miss once), so keys of tokens nobody introspects
 * any more leave the shared cache.
 */
const REVOCATIONS_GENERATION: GenerationKey = ['sso:refresh-revocations-generation', 86_400];
const tokenGeneration = (tokenHash: string): GenerationKey => [`sso:refresh-token-generation:${tokenHash}`, 60];

/** Events after which no cached answer is trusted: revocations this cache cannot place and account changes. */
const DROP_ALL_SUBJECTS = new Set(['revocation.client', 'credential.revoked', 'credential.updated', 'identity.deleted', 'identity.updated']);

interface Entry {
  live: LiveRefreshToken;
  /** The two generations read before the token was. */
  generations: string;
  /** When the entry stops being served: LIVE_CACHE_TTL_MS after it was read, never after the token expires. */
  until: number;
}

export interface CachedRefreshTokens {
  /** The repository with `live` answered from memory while it provably holds (see below). */
  repository: RefreshTokenRepository;
  /** Tokens held, for tests. */
  readonly size: number;
  stop(): Promise<void>;
}

/**
 * Hot refresh tokens' introspection from memory: `live` (what introspection asks, once per
 * call) is read from the database once and then served from a process-local map for at most
 * LIVE_CACHE_TTL_MS. Only live answers are held; every other answer is read each time. The
 * refresh grant, reuse detection and revocation never read this map: they run on the database,
 * so a 200 still means the rotation committed and a spent token is refused at once everywhere.
 *
 * A rotation or revocation answered by any replica is seen by every introspection that starts
 * after it, as without this cache: an entry is served only while both of its generations in
 * the shared cache are the ones read before the token was (read-your-writes). Every revocation
 * replaces the revocations' generation, a rotation its token's, after the change committed and
 * before it answers. When the shared cache cannot answer, nothing is cached or served from
 * memory; when a generation cannot be replaced, the entries still go:
 * - here, when this process rotates the token or revokes its family, identity or credential:
 *   as the change starts and again once it committed (a read that ran beside it is not kept);
 * - in every replica, on a revocation event (a broadcast: `revocation.session` drops the
 *   family, `revocation.subject` the identity's tokens, and any other revocation, credential
 *   or identity change drops everything), and on a bus reconnect (events may have been missed);
 * - at the latest after LIVE_CACHE_TTL_MS, the bound every verifier keeps for revoked access
 *   tokens (SECURITY.md).
 */
export async function cacheLiveRefreshTokens(
  repository: RefreshTokenRepository,
  options: { cache: Cache; bus: Bus; logger: Logger },
): Promise<CachedRefreshTokens> {
  const { cache, bus, logger } = options;
  const entries = new Map<string, Entry>();
  /** Bumped by every drop: a read that saw a drop happen while it ran does not store. */
  let drops = 0;

  const dropWhere = (matches: (live: LiveRefreshToken) => boolean) => {
    drops++;
    for (const [hash, entry] of entries) if (matches(entry.live)) entries.delete(hash);
  };
  const dropAll = () => {
    drops++;
    entries.clear();
  };

  /**
   * `change` with `drop` before it (no answer from the old entry once it started) and after it
   * (a read that ran while it did, and stored what was true then, is gone once it committed),
   * then the `generation` replaced before it answers, for every other replica.
   */
  const settled = async <T>(drop: () => void, generation: GenerationKey, change: () => Promise<T>): Promise<T> => {
    drop();
    try {
      return await change();
    } finally {
      drop();
      await bumpGeneration(cache, generation).catch((error: unknown) => {
        logger.warn({ err: error }, 'refresh-token generation not replaced; other replicas drop their cached introspections on the event or within 1 s');
      });
    }
  };

  const onEvent = async (message: { subject: string; data: unknown }) => {
    const id = (message.data as { id?: unknown } | null)?.id;
    if (message.subject === 'revocation.session' && typeof id === 'string') dropWhere((live) => live.familyId === id);
    else if (message.subject === 'revocation.subject' && typeof id === 'string') dropWhere((live) => live.identityId === id);
    else if (DROP_ALL_SUBJECTS.has(message.subject) || message.subject.startsWith('revocation.')) dropAll();
  };
  // Broadcasts: every replica drops what it holds.
  const subscriptions: Subscription[] = await Promise.all(
    [REVOCATION_SUBJECTS, 'credential.>', 'identity.>'].map((pattern) => bus.subscribe(pattern, onEvent, { broadcast: true })),
  );
  const removeReconnect = bus.onReconnect(() => {
    logger.info('bus reconnected: cached refresh-token introspections dropped');
    dropAll();
  });

  const cached: RefreshTokenRepository = {
    ...repository,
    live: async (tokenHash, now) => {
      const dropsBefore = drops;
      const read = await readGenerations(cache, [REVOCATIONS_GENERATION, tokenGeneration(tokenHash)]);
      if (read === undefined) return repository.live(tokenHash, now);
      const generations = read.join(' ');
      const entry = entries.get(tokenHash);
      if (entry) {
        if (entry.generations === generations && entry.until > now.getTime()) return entry.live;
        entries.delete(tokenHash);
      }
      const live = await repository.live(tokenHash, now);
      if (live && drops === dropsBefore) {
        if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
        entries.set(tokenHash, { live, generations, until: Math.min(Date.now() + LIVE_CACHE_TTL_MS, live.expiresAt.getTime()) });
      }
      return live;
    },
    rotate: (tokenHash, now, next) =>
      settled(
        () => {
          drops++;
          entries.delete(tokenHash);
        },
        tokenGeneration(tokenHash),
        () => repository.rotate(tokenHash, now, next),
      ),
    revoke: (which, now, issuedSince, announce) =>
      settled(
        'familyId' in which
          ? () => dropWhere((live) => live.familyId === which.familyId)
          : 'identityId' in which
            ? () => dropWhere((live) => live.identityId === which.identityId && live.familyId !== which.exceptFamilyId)
            : dropAll,
        REVOCATIONS_GENERATION,
        () => repository.revoke(which, now, issuedSince, announce),
      ),
  };

  return {
    repository: cached,
    get size() {
      return entries.size;
    },
    stop: async () => {
      removeReconnect();
      dropAll();
      await Promise.all(subscriptions.map((subscription) => subscription.unsubscribe()));
    },
  };
}
