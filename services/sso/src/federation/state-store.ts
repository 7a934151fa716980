import type { Cache } from '@app/platform';
import { z } from 'zod';
import { PROVIDER_IDS, type ProviderId, type UpstreamChecks } from './provider.js';

/**
 * How long a person has at the provider between the start and the callback. Long enough to
 * type a password and a second factor there; short, since the state is a bearer secret.
 */
export const UPSTREAM_STATE_TTL_SECONDS = 600;

/** One upstream round trip as the start left it: what the callback must check and continue. */
export interface PendingUpstream extends UpstreamChecks {
  provider: ProviderId;
  /** The pending authorization request the sign-in continues. */
  requestId: string;
}

const pendingSchema = z.object({
  provider: z.enum(PROVIDER_IDS),
  requestId: z.string(),
  state: z.string(),
  nonce: z.string(),
  codeVerifier: z.string(),
});

const stateKey = (state: string) => `sso:federation:state:${state}`;
const claimKey = (state: string) => `sso:federation:claimed:${state}`;

export interface UpstreamStateStore {
  save(pending: PendingUpstream): Promise<void>;
  /**
   * The round trip `state` names, once: the first caller takes it, every later one (a replayed
   * callback, in any replica) gets undefined, as does an unknown or expired state.
   */
  take(state: string): Promise<PendingUpstream | undefined>;
}

/**
 * Upstream state, nonce and PKCE verifier, kept server-side in the platform cache (shared by
 * every sso replica) under the state; the browser only ever carries the state.
 */
export function createUpstreamStateStore(cache: Cache): UpstreamStateStore {
  return {
    save: (pending) => cache.set(stateKey(pending.state), JSON.stringify(pending), UPSTREAM_STATE_TTL_SECONDS),
    async take(state) {
      const stored = await cache.get(stateKey(state));
      if (stored === null) return undefined;
      // The cache has no atomic get-and-delete; its counter is atomic in every implementation,
      // so the first hit claims the state and a concurrent replay sees a count above one.
      // Counted only for a state that exists: unknown ones leave nothing behind.
      const { count } = await cache.hit(claimKey(state), UPSTREAM_STATE_TTL_SECONDS);
      if (count !== 1) return undefined;
      await cache.delete(stateKey(state));
      const parsed = pendingSchema.safeParse(JSON.parse(stored));
      return parsed.success && parsed.data.state === state ? parsed.data : undefined;
    },
  };
}
