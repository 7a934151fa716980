import { describe, expect, it } from '@jest/globals';
import { cachingTokenVerifier, type Principal, type TokenVerifier } from '@app/platform';

const principal = (exp: number): Principal => ({
  id: 'someone',
  roles: [],
  claims: { iss: 'i', aud: 'a', sub: 'someone', iat: exp - 60, exp, jti: 'j', roles: [] },
});

/** A verifier that accepts tokens named "good-<exp>" and counts its calls. */
function countingVerifier(): TokenVerifier & { calls: number } {
  const verifier = {
    calls: 0,
    verify: async (token: string) => {
      verifier.calls++;
      const match = /^good-(\d+)$/.exec(token);
      if (!match) throw new Error('rejected');
      return principal(Number(match[1]));
    },
  };
  return verifier;
}

describe('cachingTokenVerifier', () => {
  const inAMinute = () => Math.floor(Date.now() / 1000) + 60;

  it('verifies a token once and answers repeats from the cache', async () => {
    const inner = countingVerifier();
    const cached = cachingTokenVerifier(inner, { maxEntries: 10 });
    const token = `good-${inAMinute()}`;
    await cached.verify(token);
    await cached.verify(token);
    await cached.verify(token);
    expect(inner.calls).toBe(1);
  });

  it('never remembers a rejection', async () => {
    const inner = countingVerifier();
    const cached = cachingTokenVerifier(inner, { maxEntries: 10 });
    await expect(cached.verify('forged')).rejects.toThrow('rejected');
    await expect(cached.verify('forged')).rejects.toThrow('rejected');
    expect(inner.calls).toBe(2);
  });

  it('does not keep a token past its exp', async () => {
    const inner = countingVerifier();
    const cached = cachingTokenVerifier(inner, { maxEntries: 10 });
    const token = `good-${Math.floor(Date.now() / 1000) + 1}`;
    await cached.verify(token);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await cached.verify(token);
    expect(inner.calls).toBe(2);
  });

  it('holds at most maxEntries tokens', async () => {
    const inner = countingVerifier();
    const cached = cachingTokenVerifier(inner, { maxEntries: 2 });
    const exp = inAMinute();
    const tokens = [`good-${exp}`, `good-${exp + 1}`, `good-${exp + 2}`];
    for (const token of tokens) await cached.verify(token);
    await cached.verify(tokens[0]!);
    expect(inner.calls).toBe(4);
  });

  it('with maxEntries 0 is the verifier itself', () => {
    const inner = countingVerifier();
    expect(cachingTokenVerifier(inner, { maxEntries: 0 })).toBe(inner);
  });
});
