import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '@app/platform';
import { ssoConfig } from '../src/index.js';

const load = (env: Record<string, string>) => loadConfig(env, [ssoConfig]);

describe('Google and GitHub sign-in', () => {
  it('is off by default, with the providers\' public endpoints as defaults', () => {
    expect(load({})).toMatchObject({
      GOOGLE_ISSUER: 'https://accounts.google.com',
      GITHUB_AUTHORIZE_URL: 'https://github.com/login/oauth/authorize',
      GITHUB_TOKEN_URL: 'https://github.com/login/oauth/access_token',
      GITHUB_API_URL: 'https://api.github.com',
    });
    expect(load({}).GOOGLE_CLIENT_ID).toBeUndefined();
  });

  it('takes a client id and secret together, naming the one missing and never echoing a secret', () => {
    expect(load({ GOOGLE_CLIENT_ID: 'id', GOOGLE_CLIENT_SECRET: 'secret' }).GOOGLE_CLIENT_SECRET).toBe('secret');
    expect(() => load({ GOOGLE_CLIENT_ID: 'id' })).toThrow('GOOGLE_CLIENT_SECRET: expected GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET together');
    let error: unknown;
    try {
      load({ GITHUB_CLIENT_SECRET: 'a-github-secret' });
    } catch (caught) {
      error = caught;
    }
    expect((error as ConfigError).problems).toEqual([{ variable: 'GITHUB_CLIENT_ID', expected: 'expected GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET together' }]);
    expect((error as ConfigError).message).not.toContain('a-github-secret');
  });

  it('accepts provider URLs over https, and over http only on this machine', () => {
    expect(load({ GOOGLE_ISSUER: 'http://127.0.0.1:8080', GITHUB_API_URL: 'http://localhost:9000/api' }).GOOGLE_ISSUER).toBe('http://127.0.0.1:8080');
    for (const variable of ['GOOGLE_ISSUER', 'GITHUB_AUTHORIZE_URL', 'GITHUB_TOKEN_URL', 'GITHUB_API_URL']) {
      expect(() => load({ [variable]: 'http://idp.example.com' })).toThrow(`${variable}: expected an https:// URL (http:// only on localhost or 127.0.0.1)`);
      expect(() => load({ [variable]: 'not a url' })).toThrow(ConfigError);
    }
  });
});

describe('the bootstrap admin and the signing keys', () => {
  it('takes the bootstrap admin\'s email and password together, never echoing the password', () => {
    expect(() => load({ BOOTSTRAP_ADMIN_PASSWORD: 'a-long-password' })).toThrow('BOOTSTRAP_ADMIN_EMAIL: expected BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD together');
    expect(() => load({ BOOTSTRAP_ADMIN_EMAIL: 'admin@example.com', BOOTSTRAP_ADMIN_PASSWORD: 'short' })).toThrow(/^Invalid configuration:\n {2}BOOTSTRAP_ADMIN_PASSWORD: expected a password of at least 12 characters$/);
  });

  it('refuses a key encryption secret under 32 characters, never echoing it', () => {
    expect(() => load({ SSO_KEY_ENCRYPTION_SECRET: 'too-short' })).toThrow(/^Invalid configuration:\n {2}SSO_KEY_ENCRYPTION_SECRET: expected at least 32 characters of secret$/);
  });
});
