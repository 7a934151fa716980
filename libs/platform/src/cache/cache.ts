/**
 * The cache port: Redis when `REDIS_URL` is set, an in-process LRU otherwise. Every method
 * rejects when the backing store cannot answer; callers decide to fail open (see `failOpen`).
 */
export interface Cache {
  readonly kind: 'redis' | 'memory';
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlSeconds: number): Promise<void>;
  delete(...keys: string[]): Promise<void>;
  /** Atomically adds one to a counter (created at 1) and returns the new value. */
  increment(key: string): Promise<number>;
  /**
   * Counts a hit in a fixed window that starts with the first hit: the count so far and the
   * seconds until the window resets. The building block of rate limits.
   */
  hit(key: string, windowSeconds: number): Promise<{ count: number; resetSeconds: number }>;
  /** Answers the server's version (`memory` for the in-process cache); rejects when unreachable. */
  ping(): Promise<{ version: string }>;
  close(): Promise<void>;
}
