import { describe, expect, it } from '@jest/globals';
import { ConfigError, loadConfig } from '@app/platform';
import { identityConfig } from '../src/index.js';

const load = (env: Record<string, string>) => loadConfig(env, [identityConfig]);

describe('identity\'s config', () => {
  it('limits sign-up to 100 per 10 minutes by default', () => {
    expect(load({}).SIGNUP_RATE_LIMIT).toEqual({ max: 100, windowSeconds: 600 });
    expect(load({ SIGNUP_RATE_LIMIT: ' 5 / 60 ' }).SIGNUP_RATE_LIMIT).toEqual({ max: 5, windowSeconds: 60 });
  });

  it.each(['0/600', '100/0', '100', 'ten/600', '-1/60', '1e3/60'])('refuses SIGNUP_RATE_LIMIT=%s, naming the variable', (value) => {
    expect(() => load({ SIGNUP_RATE_LIMIT: value })).toThrow(ConfigError);
    expect(() => load({ SIGNUP_RATE_LIMIT: value })).toThrow(/SIGNUP_RATE_LIMIT: expected <count>\/<seconds>/);
  });
});
