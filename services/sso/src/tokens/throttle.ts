import { createHash } from 'node:crypto';
import { createMemoryCache, createOutageLog, type Cache, type Logger } from '@app/platform';

/**
 * Limits on failed sign-ins, kept in the shared cache (Redis when configured) so every sso
 * replica counts together. Three counters, each in a fixed 15-minute window:
 *
 * - per client address: ADDRESS_LIMIT failures, whatever the username, block that address.
 *   One host cannot spray passwords over many accounts.
 * - per (username, address) pair: PAIR_LIMIT failures block that username *from that address
 *   only*. Guessing one password from one host is slow; the owner, signing in from anywhere
 *   else, is not affected.
 * - per username, over every address: past USERNAME_LIMIT the account is under a distributed
 *   attack, and from then on every address gets a single failure for it before its pair is
 *   blocked. An attacker with many addresses gets one guess per address per window.
 *
 * No limit ever blocks a username everywhere, so an attacker cannot lock the owner out: the
 * owner's own address is blocked only after the owner's own failures there, and every block
 * ends when its window does (at most 15 minutes). A success clears its pair's count.
 *
 * When the shared cache cannot answer, each replica counts in its own memory with the same
 * rules: the limits then hold per replica (N replicas let N times as many guesses through),
 * never not at all.
 */
export const WINDOW_SECONDS = 15 * 60;
export const ADDRESS_LIMIT = 50;
export const PAIR_LIMIT = 5;
export const USERNAME_LIMIT = 20;

export interface LoginThrottle {
  /** Seconds to wait when the address or the pair is blocked, else undefined. */
  blocked(address: string, username?: string): Promise<number | undefined>;
  recordFailure(address: string, username?: string): Promise<void>;
  recordSuccess(address: string, username: string): Promise<void>;
}

/** Usernames are hashed into keys: emails never sit in the cache, and any length fits. */
const userKey = (username: string) => createHash('sha256').update(username.trim().toLowerCase()).digest('base64url');

/** Counters a replica keeps while the shared cache is down: enough for every address of a busy spell. */
const FALLBACK_ENTRIES = 100_000;

export function createLoginThrottle(shared: Cache, logger: Logger, local: Cache = createMemoryCache({ maxEntries: FALLBACK_ENTRIES })): LoginThrottle {
  const keys = (address: string, username?: string) => ({
    address: `sso:login-failures:address:${address}`,
    pair: username === undefined ? undefined : `sso:login-failures:pair:${userKey(username)}:${address}`,
    username: username === undefined ? undefined : `sso:login-failures:user:${userKey(username)}`,
  });
  const blockKey = (counter: string) => `${counter}:blocked-until`;

  /**
   * Runs `fn` on the shared cache; when that fails, on this replica's own counters. A failure
   * recorded during an outage therefore still blocks, and `blocked` consults both stores so an
   * address blocked locally stays blocked when the shared cache returns mid-window.
   */
  const outage = createOutageLog(logger, 'cache', {
    down: 'login throttle: shared cache unavailable; counting in this process',
    up: 'login throttle: shared cache answers again',
  });
  const withFallback = async <T>(fn: (cache: Cache) => Promise<T>): Promise<T> => {
    try {
      const result = await fn(shared);
      outage.succeeded();
      return result;
    } catch (error) {
      outage.failed(error);
      return fn(local);
    }
  };

  const blockedIn = async (cache: Cache, address: string, username?: string) => {
    const k = keys(address, username);
    const until = await Promise.all([k.address, k.pair].filter((key) => key !== undefined).map((key) => cache.get(blockKey(key))));
    return Math.max(0, ...until.map((value) => Number(value ?? 0)));
  };

  return {
    blocked: async (address, username) => {
      const [fromShared, fromLocal] = await Promise.all([
        withFallback((cache) => blockedIn(cache, address, username)),
        blockedIn(local, address, username),
      ]);
      const seconds = Math.ceil((Math.max(fromShared, fromLocal) - Date.now()) / 1000);
      return seconds > 0 ? seconds : undefined;
    },

    recordFailure: async (address, username) => {
      await withFallback(async (cache) => {
        const k = keys(address, username);
        const block = (counter: string, resetSeconds: number) =>
          cache.set(blockKey(counter), String(Date.now() + resetSeconds * 1000), resetSeconds);
        const byAddress = await cache.hit(k.address, WINDOW_SECONDS);
        if (byAddress.count >= ADDRESS_LIMIT) await block(k.address, byAddress.resetSeconds);
        if (!k.pair || !k.username) return;
        const [byPair, byUsername] = await Promise.all([cache.hit(k.pair, WINDOW_SECONDS), cache.hit(k.username, WINDOW_SECONDS)]);
        if (byPair.count >= PAIR_LIMIT || byUsername.count >= USERNAME_LIMIT) await block(k.pair, byPair.resetSeconds);
      });
    },

    recordSuccess: async (address, username) => {
      const pair = keys(address, username).pair!;
      await Promise.all([
        withFallback((cache) => cache.delete(pair, blockKey(pair))).catch(() => undefined),
        local.delete(pair, blockKey(pair)),
      ]);
    },
  };
}
