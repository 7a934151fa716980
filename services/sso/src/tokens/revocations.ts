import { REVOCATIONS_CACHE_KEY, revocationSubject, type RevocationEvent } from '@app/contracts';
import type { Cache, Logger } from '@app/platform';
import type { RefreshTokenRepository, RevokedSessions } from './repository.js';

/**
 * Ends sessions and tokens, and tells every verifier: the refresh tokens are revoked and the
 * revocation events written to sso's outbox in one transaction (so none is lost once the
 * revocation committed); then each event is recorded in the cache, where verifiers that start
 * later (or whose bus was down) read it, and the relay is woken to broadcast it at once.
 */
export interface Revoker {
  /** Ends the sessions `which` names: their refresh tokens, and their access tokens by `sid`. */
  endSessions(which: RevokedSessions, alsoSessions?: string[]): Promise<number>;
  /** Every token of an identity issued before `issuedBefore` (epoch seconds), and all its refresh tokens. */
  cutOffSubject(identityId: string, issuedBefore: number): Promise<void>;
  /** Every token granted to an API key (`client_id`) before `issuedBefore` (epoch seconds). */
  cutOffClient(credentialId: string, issuedBefore: number): Promise<void>;
}

export interface RevokerOptions {
  repository: RefreshTokenRepository;
  cache: Cache;
  logger: Logger;
  /** Wakes the outbox relay. */
  eventsCommitted: () => void;
  /**
   * The longest an access token is accepted after it was issued (its TTL plus the clock
   * tolerance): a revocation entry lives that long, then no token it matches is still valid.
   */
  lifetimeSeconds: number;
}

/** No refresh token is issued after this: passed as `issuedSince`, it names no live session. */
const END_OF_TIME = new Date(8.64e15);

const outboxEventOf = (event: RevocationEvent) => ({ subject: revocationSubject(event.kind), payload: event });

export function createRevoker(options: RevokerOptions): Revoker {
  const { repository, cache, logger, lifetimeSeconds } = options;
  const nowSeconds = () => Math.floor(Date.now() / 1000);

  /** After the commit: the cache (best effort: the bus still carries it), then the broadcast. */
  const announced = async (events: RevocationEvent[]) => {
    await Promise.all(
      events.map((event) =>
        cache
          .addExpiring(REVOCATIONS_CACHE_KEY, JSON.stringify(event), event.expiresAt)
          .catch((error: unknown) => logger.warn({ err: error, kind: event.kind }, 'revocation not recorded in the cache; verifiers still hear it on the bus')),
      ),
    );
    options.eventsCommitted();
  };

  /** Revokes `which` and announces the events `extra` plus one per session with live access tokens. */
  const revoke = async (which: RevokedSessions, extra: RevocationEvent[], alsoSessions: string[]) => {
    const now = new Date();
    const expiresAt = nowSeconds() + lifetimeSeconds;
    let events: RevocationEvent[] = [];
    const revoked = await repository.revoke(which, now, new Date(now.getTime() - lifetimeSeconds * 1000), (liveFamilies) => {
      const sessions = [...new Set([...alsoSessions, ...liveFamilies])];
      events = [...extra, ...sessions.map((id): RevocationEvent => ({ kind: 'session', id, expiresAt }))];
      return events.map(outboxEventOf);
    });
    await announced(events);
    return revoked;
  };

  return {
    endSessions: (which, alsoSessions = []) => revoke(which, [], alsoSessions),
    cutOffSubject: async (identityId, issuedBefore) => {
      const event: RevocationEvent = { kind: 'subject', id: identityId, issuedBefore, expiresAt: issuedBefore + lifetimeSeconds };
      // The cut-off covers every access token of the identity: its sessions need no entries of their own.
      await repository.revoke({ identityId }, new Date(), END_OF_TIME, () => [outboxEventOf(event)]);
      await announced([event]);
    },
    cutOffClient: async (credentialId, issuedBefore) => {
      const event: RevocationEvent = { kind: 'client', id: credentialId, issuedBefore, expiresAt: issuedBefore + lifetimeSeconds };
      await repository.publish([outboxEventOf(event)]);
      await announced([event]);
    },
  };
}
