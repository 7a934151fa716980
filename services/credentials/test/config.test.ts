import { describe, expect, it } from '@jest/globals';
import { loadConfig } from '@app/platform';
import { credentialsConfig } from '../src/index.js';

const load = (env: Record<string, string>) => loadConfig(env, [credentialsConfig]);

describe('credentials\' config', () => {
  it('defaults argon2id to OWASP costs and refuses weaker ones, naming the variable', () => {
    expect(load({})).toMatchObject({ ARGON2_MEMORY_KIB: 19_456, ARGON2_TIME_COST: 2, ARGON2_PARALLELISM: 1, ARGON2_CONCURRENCY: 2 });
    expect(load({ ARGON2_MEMORY_KIB: '12288', ARGON2_TIME_COST: '3' }).ARGON2_MEMORY_KIB).toBe(12_288);
    for (const env of [{ ARGON2_MEMORY_KIB: '4096', ARGON2_TIME_COST: '10' }, { ARGON2_MEMORY_KIB: '19456', ARGON2_TIME_COST: '1' }]) {
      expect(() => load(env)).toThrow(/ARGON2_MEMORY_KIB: expected argon2id costs at or above OWASP's minimum/);
    }
  });

  it('refuses an API key hash key shorter than 32 bytes, never echoing it', () => {
    const short = Buffer.alloc(16, 1).toString('base64');
    expect(() => load({ API_KEY_HASH_KEY: short })).toThrow('API_KEY_HASH_KEY: expected at least 32 random bytes, base64 or base64url encoded (e.g. openssl rand -base64 32)');
    expect(() => load({ API_KEY_HASH_KEY: short })).not.toThrow(short);
  });
});
