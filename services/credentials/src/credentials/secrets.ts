import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
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
 * API keys look like `ak_<prefix>_<secret>`: `ak_` makes a leaked key recognizable to
 * secret scanners, the 12-character prefix (72 random bits) is the non-secret lookup key
 * stored in clear, and the secret is 32 random bytes (256 bits) in base64url.
 */
export const API_KEY_MARK = 'ak_';
const PREFIX_BYTES = 9;
const PREFIX_LENGTH = 12; // base64url of 9 bytes
const SECRET_BYTES = 32;

/** A client-supplied API key secret: URL-safe, long enough to carry at least 128 random bits. */
export const CLIENT_API_KEY_SECRET = /^[A-Za-z0-9_-]{32,256}$/;
/** Fewer distinct characters than this means a pattern (`aaaa…`, `abab…`), not random data. */
export const MIN_DISTINCT_SECRET_CHARACTERS = 12;

export const isStrongApiKeySecret = (secret: string) =>
  CLIENT_API_KEY_SECRET.test(secret) && new Set(secret).size >= MIN_DISTINCT_SECRET_CHARACTERS;

/** SHA-256 is enough for API keys: unlike passwords they carry their own entropy. */
export const hashApiKey = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

export interface IssuedApiKey {
  /** The whole key, shown to its owner once and never stored. */
  key: string;
  prefix: string;
  hash: string;
}

/** A new API key: a fresh prefix, and the given secret or 32 random bytes. */
export function issueApiKey(secret: string = randomBytes(SECRET_BYTES).toString('base64url')): IssuedApiKey {
  const prefix = randomBytes(PREFIX_BYTES).toString('base64url');
  const key = `${API_KEY_MARK}${prefix}_${secret}`;
  return { key, prefix, hash: hashApiKey(key) };
}

/** The lookup prefix of something shaped like an API key, or undefined. */
export function apiKeyPrefixOf(key: string): string | undefined {
  if (!key.startsWith(API_KEY_MARK) || key[API_KEY_MARK.length + PREFIX_LENGTH] !== '_') return undefined;
  const prefix = key.slice(API_KEY_MARK.length, API_KEY_MARK.length + PREFIX_LENGTH);
  return /^[A-Za-z0-9_-]+$/.test(prefix) ? prefix : undefined;
}

/** A digest no key hashes to, compared against when the prefix is unknown (same work either way). */
const NO_KEY_HASH = hashApiKey(randomBytes(SECRET_BYTES).toString('base64url'));

/** Compares a presented key with a stored SHA-256 in constant time. */
export function apiKeyMatches(key: string, storedHash: string | null | undefined): boolean {
  const expected = Buffer.from(storedHash ?? NO_KEY_HASH, 'hex');
  const actual = Buffer.from(hashApiKey(key), 'hex');
  return expected.length === actual.length && timingSafeEqual(expected, actual) && storedHash != null;
}
