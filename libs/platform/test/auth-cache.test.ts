import { describe, expect, it } from '@jest/globals';
import { cachingTokenVerifier, type Principal, type RevocationSet, type TokenVerifier } from '@app/platform';

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

  it('remembers a token by its signature but answers only the very token it verified', async () => {
    // Tokens of the form header.payload.signature: "good-<exp>" payloads, one signature.
    const inner = {
      calls: 0,
      verify: async (token: string) => {
        inner.calls++;
        const [, payload, signature] = token.split('.');
        const match = /^good-(\d+)$/.exec(payload ?? '');
        if (!match || signature !== 'sig') throw new Error('rejected');
        return principal(Number(match[1]));
      },
    };
    const cached = cachingTokenVerifier(inner, { maxEntries: 10 });
    const token = `h.good-${inAMinute()}.sig`;
    await cached.verify(token);
    expect(cached.remembered?.(token)).toMatchObject({ id: 'someone' });
    // Same signature, another payload: a forgery that must reach the verifier, and fail there.
    const forged = `h.evil-${inAMinute()}.sig`;
    expect(cached.remembered?.(forged)).toBeUndefined();
    await expect(cached.verify(forged)).rejects.toThrow('rejected');
    expect(inner.calls).toBe(2);
    expect(cached.remembered?.(token)).toMatchObject({ id: 'someone' });
  });

  it('answers remembered() only for tokens it verified, and refuses a revoked one there too', async () => {
    const revoked = new Set<string>();
    const revocations = { isRevoked: (claims: { sub: string }) => revoked.has(claims.sub) } as unknown as RevocationSet;
    const cached = cachingTokenVerifier(countingVerifier(), { maxEntries: 10, revocations });
    const token = `good-${inAMinute()}`;
    expect(cached.remembered?.(token)).toBeUndefined();
    await cached.verify(token);
    expect(cached.remembered?.(token)?.id).toBe('someone');
    revoked.add('someone');
    expect(() => cached.remembered?.(token)).toThrow(expect.objectContaining({ statusCode: 401 }));
    await expect(cached.verify(token)).rejects.toMatchObject({ statusCode: 401 });
  });

  it('with maxEntries 0 is the verifier itself', () => {
    const inner = countingVerifier();
    expect(cachingTokenVerifier(inner, { maxEntries: 0 })).toBe(inner);
  });
});
