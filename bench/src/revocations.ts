// The revoked sessions (c) seeds into every verifier's set (issue 11: >= 0.95x the plain (c)).
import { randomUUID } from 'node:crypto';
import type { RevocationEvent } from '@app/contracts';

/** Revoked sessions in the set of every verifier for the revocation-cost scenario. */
export const REVOCATION_COUNT = 10_000;

/** `count` revoked sessions, as sso records them, in its (kind, id) order; `sid` is one of them. */
export function revokedSessions(count: number): { sid: string; events: RevocationEvent[] } {
  const expiresAt = Math.floor(Date.now() / 1000) + 900;
  const events = Array.from({ length: count }, () => ({ kind: 'session' as const, id: `bench-${randomUUID()}`, expiresAt })).sort((a, b) => (a.id < b.id ? -1 : 1));
  return { sid: events[0]!.id, events };
}
