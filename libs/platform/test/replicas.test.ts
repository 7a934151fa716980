import { describe, expect, it } from '@jest/globals';
import { ConfigError, isUnreachable, jwksUrlOf, loadConfig, replicaUrls, roundRobin } from '@app/platform';

const refused = () => Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });

describe('service replicas', () => {
  it('reads one URL or a comma-separated list, spaces and empty entries dropped', () => {
    expect(replicaUrls('http://a:1')).toEqual(['http://a:1']);
    expect(replicaUrls(' http://a:1 , http://b:2,,')).toEqual(['http://a:1', 'http://b:2']);
  });

  it('accepts a list in a service URL variable and names the variable when an entry is not a URL', () => {
    expect(loadConfig({ CRUD_URL: 'http://127.0.0.1:3104, http://127.0.0.1:3204' }).CRUD_URL).toBe('http://127.0.0.1:3104,http://127.0.0.1:3204');
    for (const bad of ['http://127.0.0.1:3104,ftp://x', 'http://127.0.0.1:3104,not a url', ',']) {
      expect(() => loadConfig({ CRUD_URL: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ CRUD_URL: bad })).toThrow(/CRUD_URL/);
    }
  });

  it("points verifiers at the JWKS of each of the token issuer's replicas", () => {
    const config = loadConfig({ SSO_URL: 'http://127.0.0.1:3103,http://127.0.0.1:3203' });
    expect(jwksUrlOf(config)).toBe('http://127.0.0.1:3103/api/v1/sso/jwks,http://127.0.0.1:3203/api/v1/sso/jwks');
  });

  it('tells an unreachable address from other failures, through the cause chain', () => {
    expect(isUnreachable(refused())).toBe(true);
    expect(isUnreachable(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBe(false);
    expect(isUnreachable(new Error('no code'))).toBe(false);
  });

  it('takes replicas in turn and skips one nobody answers at', async () => {
    const next = roundRobin(['a', 'down', 'b']);
    const used: string[] = [];
    const call = () =>
      next(async (url) => {
        if (url === 'down') throw refused();
        used.push(url);
        return url;
      });
    for (let i = 0; i < 6; i++) await call();
    expect(used).toEqual(['a', 'b', 'b', 'a', 'b', 'b']);
  });

  it('does not retry an error that is not an unreachable address, and rethrows when none answers', async () => {
    const attempts: string[] = [];
    const next = roundRobin(['a', 'b']);
    await expect(
      next(async (url) => {
        attempts.push(url);
        throw new Error('answered 500');
      }),
    ).rejects.toThrow('answered 500');
    expect(attempts).toEqual(['a']);
    await expect(next(async () => Promise.reject(refused()))).rejects.toThrow('fetch failed');
  });
});
