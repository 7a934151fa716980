import type { JWTVerifyGetKey } from 'jose';
import type { LiveRevocationsPage, LiveRevocationsRequest } from './events.js';

/**
 * What a service may offer the other services of its own process, besides its internal API,
 * so the kit wires them together in process instead of over the network. Keyed by what is
 * offered, never by who offers it: the kit takes each from whichever service provides it, and
 * in a process where none does it falls back to the network (JWKS, the bus) or goes without.
 */
export interface Capabilities {
  /** The keys the platform's tokens are signed with, by the token's header: the process's verifier needs no JWKS fetch. */
  verificationKeys: JWTVerifyGetKey;
  /** A short-lived token of the platform's own services, for the calls the process makes on its own behalf. */
  systemToken: () => Promise<string>;
  /** The live revocations, a page at a time, as LIVE_REVOCATIONS_REQUEST answers them on the bus. */
  liveRevocations: (request: LiveRevocationsRequest) => Promise<LiveRevocationsPage>;
}
