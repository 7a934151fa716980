import { createPublicKey, verify as verifySignature } from 'node:crypto';

/**
 * Checks an ES256 JWT against a JWKS with node:crypto alone, not jose: the key named by
 * `kid`, the raw r||s signature (IEEE P1363). A second implementation, so a bug in the
 * platform's verifier cannot also hide in the check of its tokens. Returns the payload, or throws.
 */
export function verifyIndependently(token: string, jwks: { keys: Record<string, unknown>[] }): Record<string, unknown> {
  const [headerPart, payloadPart, signaturePart] = token.split('.');
  if (!headerPart || !payloadPart || signaturePart === undefined) throw new Error('not a compact JWS');
  const header = JSON.parse(Buffer.from(headerPart, 'base64url').toString('utf8')) as { alg: string; kid: string };
  if (header.alg !== 'ES256') throw new Error(`unexpected alg ${header.alg}`);
  const jwk = jwks.keys.find((key) => key.kid === header.kid);
  if (!jwk) throw new Error(`no key ${header.kid} in the JWKS`);
  const key = createPublicKey({ key: jwk as never, format: 'jwk' });
  const valid = verifySignature('sha256', Buffer.from(`${headerPart}.${payloadPart}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signaturePart, 'base64url'));
  if (!valid) throw new Error('signature does not verify');
  return JSON.parse(Buffer.from(payloadPart, 'base64url').toString('utf8')) as Record<string, unknown>;
}
