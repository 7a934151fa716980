/**
 * The cache port: Redis when `REDIS_URL` is set, an in-process LRU otherwise. Every method
 * rejects when the backing store cannot answer; callers decide to fail open (see `failOpen`).
 */
export interface Cache {
  readonly kind: 'redis' | 'memory';
  get(key: string): Promise<string | null>;
  /** The values at `keys`, in order, in one round trip. */
  getMany(keys: string[]): Promise<(string | null)[]>;
  set(key: string, value: string, ttlSeconds: number): Promise<void>;
  /** Drops the keys; a stamped key's stamp goes too, so no write under an older stamp lands (see readStamped). */
  delete(...keys: string[]): Promise<void>;
  /**
   * The value at a stamped key and its stamp, in one round trip (two for a key that had none).
   * A key without a stamp (never read, deleted or expired) gets a fresh random one, atomically,
   * which lives `ttlSeconds`. The building
   * block of cache-aside reads that hold across processes: see `writeIfStamped`.
   */
  readStamped(key: string, ttlSeconds: number): Promise<{ value: string | null; stamp: string }>;
  /**
   * Stores `value` at a stamped key for `ttlSeconds`, atomically, only while its stamp is
   * still `stamp`; true when it did. A reader that missed, loaded the value and stores it this
   * way never stores over a `delete` made after its read: the delete took the stamp, and stamps
   * are random, so one made later never equals it.
   */
  writeIfStamped(key: string, stamp: string, value: string, ttlSeconds: number): Promise<boolean>;
  /** Atomically adds one to a counter (created at 1) and returns the new value. */
  increment(key: string): Promise<number>;
  /**
   * Counts a hit in a fixed window that starts with the first hit: the count so far and the
   * seconds until the window resets. The building block of rate limits.
   */
  hit(key: string, windowSeconds: number): Promise<{ count: number; resetSeconds: number }>;
  /**
   * Adds `member` to the set at `key` until `expiresAt` (epoch seconds); members past their
   * expiry are dropped, and the set goes with its last member. For small registries that
   * every process reads whole (the token issuer's revocations), never for per-request data.
   */
  addExpiring(key: string, member: string, expiresAt: number): Promise<void>;
  /** The members of the set at `key` that have not expired, in no particular order. */
  liveMembers(key: string): Promise<string[]>;
  /** Answers the server's version (`memory` for the in-process cache); rejects when unreachable. */
  ping(): Promise<{ version: string }>;
  close(): Promise<void>;
}
