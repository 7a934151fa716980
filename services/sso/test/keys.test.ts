import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { migrateService } from '@app/platform';
import { testModes } from '@app/testing';
import { createSsoService } from '../src/index.js';
import { createKeyEncryption } from '../src/keys/key-encryption.js';
import { listenSso, openSsoDependencies, PASSWORD, startSso, verifyIndependently, type SsoDependencies, type SsoUnderTest } from './support.js';

const PUBLIC_MEMBERS = ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y'];

describe.each(testModes())('signing keys (%s)', (mode) => {
  let sso: SsoUnderTest;
  beforeAll(async () => {
    sso = await startSso(mode, { SSO_KEY_ENCRYPTION_SECRET: 'a'.repeat(40), SSO_KEY_ACTIVATION_DELAY_SECONDS: '1' });
    sso.double.addIdentity({ email: 'ada@example.com', password: PASSWORD });
  });
  afterAll(() => sso.close());

  const jwks = async () => {
    const response = await fetch(`${sso.url}/api/v1/sso/jwks`);
    return { response, body: (await response.json()) as { keys: Record<string, unknown>[] } };
  };
  const signIn = async () => String((await sso.token({ grant_type: 'password', username: 'ada@example.com', password: PASSWORD })).body.access_token);
  const kidOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { kid: string }).kid;

  it('publishes the signing key with public members only, and a short Cache-Control', async () => {
    const { response, body } = await jwks();
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(body.keys).toHaveLength(1);
    expect(Object.keys(body.keys[0]!).sort()).toEqual(PUBLIC_MEMBERS);
    expect(body.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(JSON.stringify(body)).not.toMatch(/"d"/);
  });

  it('stores the private key encrypted: no private member in the row, and only the right secret opens it', async () => {
    const rows = await sso.deps.database.query<{ kid: string; private_key: string; private_key_encrypted: boolean }>(
      'select kid, private_key, private_key_encrypted from "sso"."signing_key"',
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.private_key_encrypted).toBe(true);
      expect(row.private_key).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(row.private_key).not.toContain('"d"');
      expect(JSON.parse(createKeyEncryption('a'.repeat(40)).decrypt(row.kid, row.private_key))).toHaveProperty('d');
      expect(() => createKeyEncryption('b'.repeat(40)).decrypt(row.kid, row.private_key)).toThrow(/does not match/);
      expect(() => createKeyEncryption('a'.repeat(40)).decrypt('another-kid', row.private_key)).toThrow(/does not match/);
    }
  });

  it('rotates without rejecting a valid token: the new key is published first, the old one kept', async () => {
    const [oldKid] = (await jwks()).body.keys.map((key) => key.kid);
    // Rotated as another replica does, from another key service on the same table. A
    // running sso re-reads its signing key at the next activation it knows of, or within
    // SIGNING_KEY_REFRESH_MS: this one has signed nothing yet, so its first signature below
    // already reads the table with the new key in it.
    const { kid: newKid, activatesAt } = await sso.keys().rotate();
    // Published at once, but not signing until the activation delay has passed.
    const during = await jwks();
    expect(during.body.keys.map((key) => key.kid).sort()).toEqual([oldKid, newKid].sort());
    // Signed before the activation: the old key. (Each sign-in answered in time is checked; a
    // machine slow enough to pass the delay meanwhile may sign the later ones with either.)
    const before = await signIn();
    const beforeAnsweredAt = Date.now();
    const second = await signIn();
    const secondAnsweredAt = Date.now();
    if (beforeAnsweredAt < activatesAt.getTime()) expect(kidOf(before)).toBe(oldKid);
    if (secondAnsweredAt < activatesAt.getTime()) expect(kidOf(second)).toBe(oldKid);
    await new Promise((resolve) => setTimeout(resolve, activatesAt.getTime() - Date.now() + 50));
    const after = await signIn();
    expect(kidOf(after)).toBe(newKid);
    const keys = (await jwks()).body;
    expect(verifyIndependently(before, keys)).toMatchObject({ iss: 'http://localhost:3000' });
    expect(verifyIndependently(after, keys)).toMatchObject({ iss: 'http://localhost:3000' });
    const userinfo = await Promise.all(
      [before, after].map((token) => fetch(`${sso.url}/api/v1/sso/userinfo`, { headers: { authorization: `Bearer ${token}` } })),
    );
    expect(userinfo.map((response) => response.status)).toEqual([200, 200]);
  });

  it('keeps a retired key published until every token it signed has expired, then drops it', async () => {
    const rows = await sso.deps.database.query<{ kid: string; retired_at: Date | null; not_after: Date | null }>(
      'select kid, retired_at, not_after from "sso"."signing_key" where retired_at is not null',
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      // access TTL (900 s) + clock tolerance (30 s) + the signing-key refresh of other replicas (30 s)
      expect(new Date(row.not_after!).getTime() - new Date(row.retired_at!).getTime()).toBe((900 + 30 + 30) * 1000);
    }
    await sso.deps.database.query(`update "sso"."signing_key" set not_after = now() - interval '1 second' where retired_at is not null`);
    const kids = (await jwks()).body.keys.map((key) => key.kid);
    expect(kids).toHaveLength(1);
    expect(rows.map((row) => row.kid)).not.toContain(kids[0]);
  });

  it('rotates on schedule only when the newest key is older than the interval', async () => {
    expect(await sso.keys().rotateIfDue()).toBe(false);
  });
});

describe.each(testModes())('key creation by replicas starting together (%s)', (mode) => {
  let deps: SsoDependencies;
  beforeAll(async () => {
    deps = await openSsoDependencies(mode);
    await migrateService(deps.database, createSsoService(), deps.logger);
  });
  afterAll(() => deps.dispose());

  it('creates exactly one signing key when three replicas start at once, and they all sign with it', async () => {
    const replicas = await Promise.all(
      Array.from({ length: 3 }, () => listenSso(deps, 0)),
    );
    try {
      const rows = await deps.database.query<{ kid: string }>('select kid from "sso"."signing_key"');
      expect(rows).toHaveLength(1);
      const published = await Promise.all(replicas.map(async (replica) => (await (await fetch(`${replica.url}/api/v1/sso/jwks`)).json()) as { keys: { kid: string }[] }));
      expect(published.map((set) => set.keys.map((key) => key.kid))).toEqual([[rows[0]!.kid], [rows[0]!.kid], [rows[0]!.kid]]);
    } finally {
      await Promise.all(replicas.map((replica) => replica.close()));
    }
  });
});
