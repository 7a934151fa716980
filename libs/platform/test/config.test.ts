import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '@app/platform';

describe('loadConfig', () => {
  it('applies the defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      HOST: '0.0.0.0',
      DATA_DIR: '.data',
      BODY_LIMIT: 1_048_576,
      HEALTH_URL: 'http://127.0.0.1:3005',
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.PORT).toBeUndefined();
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', PORT: '' }).DATABASE_URL).toBeUndefined();
  });

  it('parses typed values', () => {
    const config = loadConfig({ PORT: '8080', DATABASE_URL: 'postgres://u@db:5432/app', PLATFORM_SERVICES: 'crud, identity' });
    expect(config.PORT).toBe(8080);
    expect(config.PLATFORM_SERVICES).toEqual(['crud', 'identity']);
  });

  it('names every bad variable and what it expects', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', REDIS_URL: 'http://cache' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems.map((p) => p.variable).sort()).toEqual(['DATABASE_URL', 'LOG_LEVEL', 'PORT', 'REDIS_URL']);
    expect((error as ConfigError).message).toContain('PORT: expected a port number from 0 to 65535, got "eighty"');
    expect((error as ConfigError).message).toContain('DATABASE_URL: expected a URL starting with postgres:// or postgresql://');
    expect((error as ConfigError).message).toContain('LOG_LEVEL: expected one of "fatal"');
  });

  it('rejects a port out of range and an unknown service name', () => {
    expect(() => loadConfig({ PORT: '70000' })).toThrow('PORT: expected a port number from 0 to 65535, got "70000"');
    expect(() => loadConfig({ PLATFORM_SERVICES: 'crud,billing' })).toThrow(/PLATFORM_SERVICES: expected one of "gateway"/);
  });

  it('defaults argon2id to OWASP costs and refuses weaker ones, naming the variable', () => {
    expect(loadConfig({})).toMatchObject({ ARGON2_MEMORY_KIB: 19_456, ARGON2_TIME_COST: 2, ARGON2_PARALLELISM: 1, ARGON2_CONCURRENCY: 2 });
    expect(loadConfig({ ARGON2_MEMORY_KIB: '12288', ARGON2_TIME_COST: '3' }).ARGON2_MEMORY_KIB).toBe(12_288);
    for (const env of [{ ARGON2_MEMORY_KIB: '4096', ARGON2_TIME_COST: '10' }, { ARGON2_MEMORY_KIB: '19456', ARGON2_TIME_COST: '1' }]) {
      expect(() => loadConfig(env)).toThrow(/ARGON2_MEMORY_KIB: expected argon2id costs at or above OWASP's minimum/);
    }
  });
});

describe('TRUST_PROXY and SIGNUP_RATE_LIMIT', () => {
  it('trusts no proxy and limits sign-up to 100 per 10 minutes by default', () => {
    const config = loadConfig({});
    expect(config.TRUST_PROXY).toBe('none');
    expect(config.SIGNUP_RATE_LIMIT).toEqual({ max: 100, windowSeconds: 600 });
  });

  it.each(['0/600', '100/0', '100', 'ten/600', '-1/60', '1e3/60'])('refuses SIGNUP_RATE_LIMIT=%s, naming the variable', (value) => {
    expect(() => loadConfig({ SIGNUP_RATE_LIMIT: value })).toThrow(ConfigError);
    expect(() => loadConfig({ SIGNUP_RATE_LIMIT: value })).toThrow(/SIGNUP_RATE_LIMIT: expected <count>\/<seconds>/);
  });

  it('refuses a TRUST_PROXY entry that is not an address, a range or a name', () => {
    expect(() => loadConfig({ TRUST_PROXY: 'loopback,gateway.local' })).toThrow(/TRUST_PROXY: expected IPs, CIDR ranges.*"gateway\.local"/);
  });
});

describe('Google and GitHub sign-in', () => {
  it('is off by default, with the providers\' public endpoints as defaults', () => {
    expect(loadConfig({})).toMatchObject({
      GOOGLE_ISSUER: 'https://accounts.google.com',
      GITHUB_AUTHORIZE_URL: 'https://github.com/login/oauth/authorize',
      GITHUB_TOKEN_URL: 'https://github.com/login/oauth/access_token',
      GITHUB_API_URL: 'https://api.github.com',
    });
    expect(loadConfig({}).GOOGLE_CLIENT_ID).toBeUndefined();
  });

  it('takes a client id and secret together, naming the one missing and never echoing a secret', () => {
    expect(loadConfig({ GOOGLE_CLIENT_ID: 'id', GOOGLE_CLIENT_SECRET: 'secret' }).GOOGLE_CLIENT_SECRET).toBe('secret');
    expect(() => loadConfig({ GOOGLE_CLIENT_ID: 'id' })).toThrow('GOOGLE_CLIENT_SECRET: expected GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET together');
    let error: unknown;
    try {
      loadConfig({ GITHUB_CLIENT_SECRET: 'a-github-secret' });
    } catch (caught) {
      error = caught;
    }
    expect((error as ConfigError).problems).toEqual([{ variable: 'GITHUB_CLIENT_ID', expected: 'expected GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET together' }]);
    expect((error as ConfigError).message).not.toContain('a-github-secret');
  });

  it('accepts provider URLs over https, and over http only on this machine', () => {
    expect(loadConfig({ GOOGLE_ISSUER: 'http://127.0.0.1:8080', GITHUB_API_URL: 'http://localhost:9000/api' }).GOOGLE_ISSUER).toBe('http://127.0.0.1:8080');
    for (const variable of ['GOOGLE_ISSUER', 'GITHUB_AUTHORIZE_URL', 'GITHUB_TOKEN_URL', 'GITHUB_API_URL']) {
      expect(() => loadConfig({ [variable]: 'http://idp.example.com' })).toThrow(`${variable}: expected an https:// URL (http:// only on localhost or 127.0.0.1)`);
      expect(() => loadConfig({ [variable]: 'not a url' })).toThrow(ConfigError);
    }
  });
});
