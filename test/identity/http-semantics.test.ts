import { randomUUID } from 'node:crypto';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { requestBytes } from '@app/testing';
import { CASES, startHarness, type Harness } from './harness.js';

/** What a strong entity tag of the kit looks like: 22 base64url characters, quoted, no W/. */
const STRONG_TAG = /^"[\w-]{22}"$/;

describe.each(CASES)('HTTP semantics of identities and credentials (%s, %s)', (topology, mode) => {
  let h: Harness;
  let admin: string;

  const register = async () => {
    const reply = await h.call('POST', '/api/v1/identity', { body: { name: 'Tagged', email: `tagged-${randomUUID()}@example.com` } });
    expect(reply.status).toBe(201);
    return { record: reply.body[0], etag: reply.headers.get('etag')!, location: reply.headers.get('location')! };
  };
  const addCredential = async (identityId: string) => {
    const reply = await h.call('POST', '/api/v1/credentials', {
      token: admin,
      body: { identity_id: identityId, provider: 'GITHUB', subject: `gh-${randomUUID()}` },
    });
    expect(reply.status).toBe(201);
    return { record: reply.body[0], etag: reply.headers.get('etag')!, location: reply.headers.get('location')! };
  };

  beforeAll(async () => {
    h = await startHarness(mode, topology);
    admin = await h.issuer.mint(randomUUID(), ['admin']);
  });
  afterAll(() => h.close());

  describe('identities', () => {
    it('answers ETag and Location on 201; the Location reads the same record and tag', async () => {
      const { record, etag, location } = await register();
      expect(etag).toMatch(STRONG_TAG);
      expect(location).toBe(`/api/v1/identity/${record.id}`);
      const read = await h.call('GET', location, { token: admin });
      expect(read.body).toEqual([record]);
      expect(read.headers.get('etag')).toBe(etag);
      // A second read comes from the cache: the same tag.
      expect((await h.call('GET', location, { token: admin })).headers.get('etag')).toBe(etag);
    });

    it('answers 304 with the tag and no body to If-None-Match, also by email, and 200 once it changed', async () => {
      const { record, etag } = await register();
      const notModified = await h.call('GET', `/api/v1/identity/${record.id}`, { token: admin, headers: { 'if-none-match': etag } });
      expect([notModified.status, notModified.headers.get('etag'), notModified.text]).toEqual([304, etag, '']);
      const byEmail = await h.call('GET', `/api/v1/identity/email/${record.email}`, { token: admin, headers: { 'if-none-match': etag } });
      expect(byEmail.status).toBe(304);
      const updated = await h.call('PUT', `/api/v1/identity/${record.id}`, { token: admin, body: { name: 'Renamed' } });
      expect(updated.headers.get('etag')).toMatch(STRONG_TAG);
      expect(updated.headers.get('etag')).not.toBe(etag);
      const read = await h.call('GET', `/api/v1/identity/${record.id}`, { token: admin, headers: { 'if-none-match': etag } });
      expect(read.status).toBe(200);
      expect(read.headers.get('etag')).toBe(updated.headers.get('etag'));
    });

    it('answers 403 before 304 to a caller who may not read the identity', async () => {
      const { record, etag } = await register();
      const stranger = await h.issuer.mint(randomUUID());
      expect((await h.call('GET', `/api/v1/identity/${record.id}`, { token: stranger, headers: { 'if-none-match': etag } })).status).toBe(403);
    });

    it('answers 412 problem+json to a stale If-Match, localized, and changes nothing', async () => {
      const { record, etag } = await register();
      const changed = await h.call('PUT', `/api/v1/identity/${record.id}`, { token: admin, body: { name: 'First' } });
      const stale = await h.call('PUT', `/api/v1/identity/${record.id}`, {
        token: admin,
        headers: { 'if-match': etag, 'accept-language': 'fr' },
        body: { name: 'Second' },
      });
      expect(stale.status).toBe(412);
      expect(stale.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(stale.body).toMatchObject({ status: 412, code: 'PLATFORM_PRECONDITION_FAILED', title: 'Précondition échouée' });
      const read = await h.call('GET', `/api/v1/identity/${record.id}`, { token: admin });
      expect(read.body[0].name).toBe('First');
      expect(read.headers.get('etag')).toBe(changed.headers.get('etag'));
    });

    it('lets exactly one of concurrent updates with the same If-Match through', async () => {
      const { record, etag } = await register();
      const names = ['One', 'Two', 'Three', 'Four'];
      const replies = await Promise.all(
        names.map((name) => h.call('PUT', `/api/v1/identity/${record.id}`, { token: admin, headers: { 'if-match': etag }, body: { name } })),
      );
      expect(replies.map((reply) => reply.status).sort()).toEqual([200, 412, 412, 412]);
      const winner = replies.find((reply) => reply.status === 200)!;
      const read = await h.call('GET', `/api/v1/identity/${record.id}`, { token: admin });
      expect(read.body).toEqual(winner.body);
      expect(read.headers.get('etag')).toBe(winner.headers.get('etag'));
    });

    it('proceeds with If-Match naming the current tag, or *', async () => {
      const { record, etag } = await register();
      const first = await h.call('PUT', `/api/v1/identity/${record.id}`, { token: admin, headers: { 'if-match': etag }, body: { name: 'Matched' } });
      expect(first.status).toBe(200);
      const second = await h.call('PUT', `/api/v1/identity/${record.id}`, { token: admin, headers: { 'if-match': '*' }, body: { name: 'Any' } });
      expect(second.status).toBe(200);
      expect(second.body[0].name).toBe('Any');
    });

    it('compresses a list over 1 KB through the edge, in br and gzip, to the same JSON', async () => {
      await Promise.all([register(), register(), register(), register(), register()]);
      const url = new URL('/api/v1/identity?limit=10', h.edge).toString();
      const headers = { authorization: `Bearer ${admin}` };
      const plain = await requestBytes(url, { headers });
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.body.length).toBeGreaterThan(1024);
      for (const [encoding, decode] of [
        ['br', brotliDecompressSync],
        ['gzip', gunzipSync],
      ] as const) {
        const compressed = await requestBytes(url, { headers: { ...headers, 'accept-encoding': encoding } });
        expect(compressed.headers['content-encoding']).toBe(encoding);
        expect(compressed.headers.vary?.toLowerCase()).toContain('accept-encoding');
        expect(JSON.parse(decode(compressed.body).toString('utf8'))).toEqual(JSON.parse(plain.body.toString('utf8')));
      }
    });
  });

  describe('credentials', () => {
    it('answers ETag and Location on 201, the same tag on a read of the Location, 304 to If-None-Match', async () => {
      const { record: identity } = await register();
      const { record, etag, location } = await addCredential(identity.id);
      expect(etag).toMatch(STRONG_TAG);
      expect(location).toBe(`/api/v1/credentials/${record.id}`);
      const read = await h.call('GET', location, { token: admin });
      expect([read.body, read.headers.get('etag')]).toEqual([[record], etag]);
      const notModified = await h.call('GET', location, { token: admin, headers: { 'if-none-match': etag } });
      expect([notModified.status, notModified.text]).toEqual([304, '']);
    });

    it('answers 412 to a stale If-Match on PUT and DELETE, changing and revoking nothing', async () => {
      const { record: identity } = await register();
      const { record, etag } = await addCredential(identity.id);
      const changed = await h.call('PUT', `/api/v1/credentials/${record.id}`, { token: admin, body: { activated: false } });
      expect(changed.status).toBe(200);
      expect(changed.headers.get('etag')).not.toBe(etag);
      const update = await h.call('PUT', `/api/v1/credentials/${record.id}`, { token: admin, headers: { 'if-match': etag }, body: { activated: true } });
      expect(update.status).toBe(412);
      expect(update.body).toMatchObject({ code: 'PLATFORM_PRECONDITION_FAILED' });
      const revoke = await h.call('DELETE', `/api/v1/credentials/${record.id}`, { token: admin, headers: { 'if-match': etag } });
      expect(revoke.status).toBe(412);
      const read = await h.call('GET', `/api/v1/credentials/${record.id}`, { token: admin });
      expect(read.body[0].activated).toBe(false);
      expect(read.headers.get('etag')).toBe(changed.headers.get('etag'));
      const current = await h.call('DELETE', `/api/v1/credentials/${record.id}`, { token: admin, headers: { 'if-match': changed.headers.get('etag')! } });
      expect(current.status).toBe(204);
    });

    it('lets exactly one of concurrent updates with the same If-Match through', async () => {
      const { record: identity } = await register();
      const { record, etag } = await addCredential(identity.id);
      const replies = await Promise.all(
        [false, true, false].map((activated) =>
          h.call('PUT', `/api/v1/credentials/${record.id}`, { token: admin, headers: { 'if-match': etag }, body: { activated, subject: `gh-${randomUUID()}` } }),
        ),
      );
      expect(replies.map((reply) => reply.status).sort()).toEqual([200, 412, 412]);
      const winner = replies.find((reply) => reply.status === 200)!;
      expect((await h.call('GET', `/api/v1/credentials/${record.id}`, { token: admin })).body).toEqual(winner.body);
    });
  });
});
