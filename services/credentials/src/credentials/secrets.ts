import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import argon2 from 'argon2';

/** argon2id costs, from config (ARGON2_*). */
export interface Argon2Parameters {
  memoryCost: number;
  timeCost: number;
  parallelism: number;
}

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Whether `password` matches `hash`; a malformed hash is a mismatch, never an error. */
  verify(hash: string, password: string): Promise<boolean>;
  /** Whether a stored hash was made with other costs than today's (then it is rehashed on use). */
  needsRehash(hash: string): boolean;
  /**
   * Spends the time of one verification against a hash nobody knows the password of, so
   * an answer for a missing account takes as long as one for a wrong password.
   */
  verifyDummy(password: string): Promise<void>;
}

/** Runs at most `limit` tasks at once; the others wait in arrival order. */
export function createLimiter(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

/**
 * argon2id through the native `argon2` package, which runs on libuv's thread pool: a
 * verification never blocks the event loop. `concurrency` bounds how many hashes hold pool
 * threads at once, leaving the rest to WebCrypto (token checks), fs and dns.
 */
export function createPasswordHasher(parameters: Argon2Parameters & { concurrency: number }): PasswordHasher {
  const { concurrency, ...costs } = parameters;
  // The package types `type` as its literal union while exporting the constant as a number.
  const options = { type: argon2.argon2id as 2, ...costs };
  const limited = createLimiter(concurrency);
  let dummy: Promise<string> | undefined;
  const verify = async (hash: string, password: string) => {
    try {
      return await limited(() => argon2.verify(hash, password));
    } catch {
      return false;
    }
  };
  return {
    hash: (password) => limited(() => argon2.hash(password, options)),
    verify,
    needsRehash: (hash) => {
      try {
        return argon2.needsRehash(hash, costs);
      } catch {
        return true;
      }
    },
    verifyDummy: async (password) => {
      dummy ??= limited(() => argon2.hash(randomBytes(32).toString('base64url'), options));
      await verify(await dummy, password);
    },
  };
}

/**
 * API keys. The client supplies the secret, and that secret is the key: what it later sends
 * as `client_secret`. It is stored only as HMAC-SHA256 under a server key (API_KEY_HASH_KEY,
 * or one kept in this service's database), so a copy of the table alone lets nobody test
 * guesses offline, and the hash is unique and indexed, so a key is found in O(1).
 */
export const API_KEY_SECRET_MIN_LENGTH = 32;
export const API_KEY_SECRET_MAX_LENGTH = 256;
/** The HMAC key's size: SHA-256's block-sized security needs no more than 32 bytes. */
export const API_KEY_HASH_KEY_BYTES = 32;

/** URL-safe characters only: the key travels in forms, HTTP Basic and environment files unescaped. */
const URL_SAFE = /^[A-Za-z0-9_-]+$/;
/** Fewer distinct characters than this means a pattern (`aaaa…`, `abab…`), not random data. */
export const MIN_DISTINCT_SECRET_CHARACTERS = 12;

/** Whether `secret` repeats a unit shorter than half of it (`abcdefghijkl` twice and more). */
const isPeriodic = (secret: string) => {
  for (let period = 1; period <= secret.length / 2; period++) {
    let repeats = true;
    for (let i = period; i < secret.length && repeats; i++) repeats = secret[i] === secret[i - period];
    if (repeats) return true;
  }
  return false;
};

/**
 * Whether half or more of the steps between neighbours go to the next or previous character
 * (`abcdef…`, `0123…`, `zyx…`): a run typed by hand, not random data (random data has such a
 * step about once in 30).
 */
const isSequential = (secret: string) => {
  let steps = 0;
  for (let i = 1; i < secret.length; i++) if (Math.abs(secret.charCodeAt(i) - secret.charCodeAt(i - 1)) === 1) steps++;
  return steps * 2 >= secret.length - 1;
};

/** Whether a client's secret looks like random data rather than a pattern (its length is checked apart). */
export const isRandomLookingSecret = (secret: string) =>
  URL_SAFE.test(secret) && new Set(secret).size >= MIN_DISTINCT_SECRET_CHARACTERS && !isPeriodic(secret) && !isSequential(secret);

export interface ApiKeyHasher {
  /** The keyed hash a key is stored and found by (hex). */
  hash(secret: string): string;
  /** Compares a presented key with a stored keyed hash in constant time; no hash is a mismatch. */
  matches(secret: string, storedHash: string | null | undefined): boolean;
}

export function createApiKeyHasher(key: Buffer): ApiKeyHasher {
  if (key.length < API_KEY_HASH_KEY_BYTES) throw new Error(`the API key hash key needs at least ${API_KEY_HASH_KEY_BYTES} bytes`);
  const hash = (secret: string) => createHmac('sha256', key).update(secret, 'utf8').digest('hex');
  const nothing = hash(randomBytes(API_KEY_HASH_KEY_BYTES).toString('base64url'));
  return {
    hash,
    matches: (secret, storedHash) => digestsEqual(hash(secret), storedHash ?? nothing) && storedHash != null,
  };
}

/** The configured key (base64 or base64url, validated by the config), or undefined when unset. */
export const decodeApiKeyHashKey = (configured: string | undefined): Buffer | undefined =>
  configured === undefined ? undefined : Buffer.from(configured, 'base64');

const digestsEqual = (a: string, b: string) => {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
};

/**
 * Keys issued before issue 11 look like `ak_<12-character prefix>_<secret>` and are stored as
 * plain SHA-256 of the whole key, found by the prefix. They keep working through this path,
 * and the first successful use stores them under the keyed hash (the prefix and the old hash
 * are cleared), as a password is rehashed when its costs change.
 */
export const LEGACY_API_KEY_MARK = 'ak_';
const LEGACY_PREFIX_LENGTH = 12; // base64url of 9 bytes

/** The lookup prefix of something shaped like a legacy API key, or undefined. */
export function legacyApiKeyPrefixOf(key: string): string | undefined {
  if (!key.startsWith(LEGACY_API_KEY_MARK) || key[LEGACY_API_KEY_MARK.length + LEGACY_PREFIX_LENGTH] !== '_') return undefined;
  const prefix = key.slice(LEGACY_API_KEY_MARK.length, LEGACY_API_KEY_MARK.length + LEGACY_PREFIX_LENGTH);
  return URL_SAFE.test(prefix) ? prefix : undefined;
}

/** The legacy unkeyed digest (SHA-256 of the whole key). */
export const legacyApiKeyHash = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

const NO_LEGACY_HASH = legacyApiKeyHash(randomBytes(32).toString('base64url'));

/** Compares a presented key with a legacy SHA-256 in constant time. */
export const legacyApiKeyMatches = (key: string, storedHash: string | null | undefined): boolean =>
  digestsEqual(legacyApiKeyHash(key), storedHash ?? NO_LEGACY_HASH) && storedHash != null;
