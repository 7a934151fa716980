import type { RevocationEvent } from '@app/contracts';
import type { RevocationSource } from '@app/platform';
import type { RefreshTokenRepository, RevokedSessions } from './repository.js';

/**
 * Ends sessions and tokens, and tells every verifier: the refresh tokens are revoked, and the
 * revocations recorded in sso's `revocation` table and their events written to its outbox, in
 * one transaction (so none is lost once the revocation committed); then the relay is woken to
 * broadcast them at once. Verifiers that start later (or whose bus was down) read the table
 * (`liveRevocations`).
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

export function createRevoker(options: RevokerOptions): Revoker {
  const { repository, lifetimeSeconds } = options;
  const nowSeconds = () => Math.floor(Date.now() / 1000);

  /** Revokes `which` and announces the events `extra` plus one per session with live access tokens. */
  const revoke = async (which: RevokedSessions, extra: RevocationEvent[], alsoSessions: string[]) => {
    const now = new Date();
    const expiresAt = nowSeconds() + lifetimeSeconds;
    const revoked = await repository.revoke(which, now, new Date(now.getTime() - lifetimeSeconds * 1000), (liveFamilies) => {
      const sessions = [...new Set([...alsoSessions, ...liveFamilies])];
      return [...extra, ...sessions.map((id): RevocationEvent => ({ kind: 'session', id, expiresAt }))];
    });
    options.eventsCommitted();
    return revoked;
  };

  return {
    endSessions: (which, alsoSessions = []) => revoke(which, [], alsoSessions),
    cutOffSubject: async (identityId, issuedBefore) => {
      const event: RevocationEvent = { kind: 'subject', id: identityId, issuedBefore, expiresAt: issuedBefore + lifetimeSeconds };
      // The cut-off covers every access token of the identity: its sessions need no entries of their own.
      await repository.revoke({ identityId }, new Date(), END_OF_TIME, () => [event]);
      options.eventsCommitted();
    },
    cutOffClient: async (credentialId, issuedBefore) => {
      const event: RevocationEvent = { kind: 'client', id: credentialId, issuedBefore, expiresAt: issuedBefore + lifetimeSeconds };
      await repository.record([event]);
      options.eventsCommitted();
    },
  };
}

/** Revocations per answer: a page stays far below NATS's default 1 MB message limit. */
const LIVE_REVOCATIONS_PAGE = 1_000;

/** sso's record of live revocations, a page at a time: what every verifier seeds its set from. */
export function liveRevocationsOf(repository: RefreshTokenRepository): RevocationSource {
  return (request) => repository.liveRevocations(request, Math.floor(Date.now() / 1000), LIVE_REVOCATIONS_PAGE);
}
