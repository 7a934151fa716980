// What an Idempotency-Key keeps of a create with a secret: never the secret, nor a plain hash
// of a body holding it (issue 25, point 4).
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { canonicalJson } from '@app/platform';
import { CASES, startHarness, type Harness } from './harness.js';

const PASSWORD = 'correct horse battery staple';

describe.each(CASES)('Idempotency-Key on credentials (%s, %s)', (topology, mode) => {
  let h: Harness;
  let admin: string;

  beforeAll(async () => {
    h = await startHarness(mode, topology);
    admin = await h.issuer.mint(randomUUID(), ['admin']);
  });
  afterAll(() => h?.close());

  it('keeps a password only as its keyed hash in the fingerprint, and answers the retry as the first', async () => {
    const identity = await h.call('POST', '/api/v1/identity', { body: { name: 'Ada', email: `ada-${randomUUID()}@example.com` } });
    const body = { identity_id: identity.body[0].id, provider: 'LOCAL', secret: PASSWORD };
    const key = randomUUID();
    const first = await h.call('POST', '/api/v1/credentials', { token: admin, body, headers: { 'idempotency-key': key } });
    const retry = await h.call('POST', '/api/v1/credentials', { token: admin, body, headers: { 'idempotency-key': key } });
    expect(first.status).toBe(201);
    expect([retry.status, retry.text, retry.headers.get('location')]).toEqual([201, first.text, first.headers.get('location')]);

    const [kept] = await h.deps.database.query<{ fingerprint: string; body: string; headers: unknown }>(
      'select fingerprint, body, headers from "credentials"."_idempotency" where key = $1',
      [key],
    );
    expect(kept).toBeDefined();
    const plain = createHash('sha256').update(canonicalJson(body)).digest('hex');
    expect(kept!.fingerprint).not.toBe(plain);
    expect(JSON.stringify(kept)).not.toContain(PASSWORD);
    // One credential: the retry created nothing.
    const list = await h.call('GET', `/api/v1/credentials?identity_id=${body.identity_id}`, { token: admin });
    expect(list.body).toHaveLength(1);
  });
});
