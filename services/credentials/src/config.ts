import { positiveInt, secret, type SharedConfig } from '@app/platform';
import { z } from 'zod';

/** credentials' own variables, parsed beside the shared ones: password hashing and API key hashing. */
export const credentialsConfig = z
  .object({
    /**
     * argon2id cost of LOCAL password hashes. The defaults are OWASP's second recommended
     * configuration (m=19 MiB, t=2, p=1); a weaker setting than OWASP's table is refused
     * below. Raising them is safe at any time: stored hashes are upgraded when their owner
     * next signs in (rehash on a successful verify).
     */
    ARGON2_MEMORY_KIB: positiveInt('a memory cost in KiB').default(19_456),
    ARGON2_TIME_COST: positiveInt('a number of argon2 passes, at least 1').default(2),
    ARGON2_PARALLELISM: positiveInt('a number of argon2 lanes, at least 1').default(1),
    /**
     * argon2 hashes run on libuv's thread pool (4 threads unless UV_THREADPOOL_SIZE says
     * otherwise), which WebCrypto (every JWT check), fs and dns share. At most this many run at
     * once, so a burst of sign-ins queues behind itself instead of stalling every token check.
     */
    ARGON2_CONCURRENCY: positiveInt('a number of concurrent argon2 hashes, at least 1').default(2),
    /**
     * The key for API key hashes (HMAC-SHA256): at least 32 random bytes, base64 or base64url
     * encoded (`openssl rand -base64 32`). Unset: a key generated once and kept in credentials'
     * own database (stable across restarts and replicas). Changing it invalidates every API
     * key hashed under the previous one.
     */
    API_KEY_HASH_KEY: secret(
      z
        .string()
        .refine((value) => /^[A-Za-z0-9+/_-]+={0,2}$/.test(value) && Buffer.from(value, 'base64').length >= 32, {
          error: 'expected at least 32 random bytes, base64 or base64url encoded (e.g. openssl rand -base64 32)',
        })
        .optional(),
    ),
  })
  // OWASP's argon2id table trades memory for passes: 47104x1, 19456x2, 12288x3, 9216x4,
  // 7168x5 KiB. Every row spends at least 35840 KiB-passes with at least 7 MiB of memory.
  .superRefine((config, ctx) => {
    if (config.ARGON2_MEMORY_KIB < 7_168 || config.ARGON2_MEMORY_KIB * config.ARGON2_TIME_COST < 35_840) {
      ctx.addIssue({
        code: 'custom',
        path: ['ARGON2_MEMORY_KIB'],
        message:
          "expected argon2id costs at or above OWASP's minimum: ARGON2_MEMORY_KIB >= 7168 and " +
          'ARGON2_MEMORY_KIB x ARGON2_TIME_COST >= 35840 (e.g. 19456 with ARGON2_TIME_COST=2)',
      });
    }
  });

/** credentials's configuration: the shared variables and its own. */
export type CredentialsConfig = SharedConfig & z.output<typeof credentialsConfig>;
