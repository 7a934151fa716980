import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventually, holdRowLocks, itIf, ON_REAL_POSTGRES_ONLY, testModes } from '@app/testing';
import { aPost, aProduct, startCrud, type CrudHarness, type TestRequest, type TestResponse, type Transport } from './helper.js';

const cases = testModes().flatMap((mode) => (['inject', 'gateway'] as Transport[]).map((transport) => [mode, transport] as const));

/** What a client sees of a create's answer: a replay must give all of it again. */
const answerOf = (response: TestResponse) => ({
  status: response.status,
  body: response.text,
  location: response.headers.location,
  etag: response.headers.etag,
  type: response.headers['content-type'],
});

describe.each(cases)('Idempotency-Key on creates (%s, through %s)', (mode, transport) => {
  let crud: CrudHarness;
  let auth: Record<string, string>;
  const send = (request: TestRequest, token = crud.token) => crud.send({ ...request, headers: { authorization: `Bearer ${token}`, ...request.headers } });
  const createPost = (body: Record<string, unknown>, key: string | undefined, extra: Record<string, string> = {}, token?: string) =>
    send({ method: 'POST', url: '/api/v1/posts', body, headers: { ...(key === undefined ? {} : { 'idempotency-key': key }), ...extra } }, token);
  const postsWithSlug = async (slug: unknown) =>
    Number((await crud.deps.database.query<{ n: number }>('select count(*)::int4 as n from "crud"."post" where slug = $1', [slug]))[0]!.n);
  const keysStored = async (key: string) =>
    Number((await crud.deps.database.query<{ n: number }>('select count(*)::int4 as n from "crud"."_idempotency" where key = $1', [key]))[0]!.n);

  beforeAll(async () => {
    crud = await startCrud(mode, transport);
    auth = { authorization: `Bearer ${crud.token}` };
  });
  afterAll(() => crud?.close());

  it('answers a retry with the same key and body with the first answer, and creates one record', async () => {
    const key = randomUUID();
    const body = aPost();
    const first = await createPost(body, key);
    const retry = await createPost(body, key);
    expect(first.status).toBe(201);
    expect(answerOf(retry)).toEqual(answerOf(first));
    expect(await postsWithSlug(body.slug)).toBe(1);
    // The record is where Location says, as the first answer gave it.
    const read = await send({ method: 'GET', url: first.headers.location! });
    expect(read.json).toEqual(first.json);
  });

  it('takes the same body with its fields in another order as the same request', async () => {
    const key = randomUUID();
    const body = aPost();
    const first = await createPost(body, key);
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const retry = await crud.send({ method: 'POST', url: '/api/v1/posts', rawBody: JSON.stringify(reordered), headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': key } });
    expect(answerOf(retry)).toEqual(answerOf(first));
    expect(await postsWithSlug(body.slug)).toBe(1);
  });

  it('refuses the key with another body (422, localized) and creates nothing more', async () => {
    const key = randomUUID();
    const body = aPost();
    await createPost(body, key);
    const other = aPost();
    const reused = await createPost(other, key, { 'accept-language': 'de' });
    expect(reused.status).toBe(422);
    expect(reused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(reused.json).toMatchObject({ status: 422, code: 'PLATFORM_IDEMPOTENCY_KEY_REUSED', detail: expect.stringContaining('Idempotency-Key wurde') });
    expect(await postsWithSlug(other.slug)).toBe(0);
    // A field changed is another body too.
    expect((await createPost({ ...body, title: 'Another title' }, key)).status).toBe(422);
  });

  it('creates without a key as before: two sends, two records', async () => {
    const body = aProduct({ name: `no-key-${randomUUID().slice(0, 8)}` });
    const [a, b] = [await send({ method: 'POST', url: '/api/v1/products', body }), await send({ method: 'POST', url: '/api/v1/products', body })];
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.headers.location).not.toBe(b.headers.location);
  });

  it('keeps keys apart per caller, per client and per path', async () => {
    const key = randomUUID();
    const body = aProduct({ name: `scoped-${randomUUID().slice(0, 8)}` });
    const sub = randomUUID();
    const tokens = [await crud.issuer.mint(sub, [], { client_id: 'app-a' }), await crud.issuer.mint(sub, [], { client_id: 'app-b' }), await crud.issuer.mint(randomUUID())];
    const answers = [];
    for (const token of tokens) answers.push(await send({ method: 'POST', url: '/api/v1/products', body, headers: { 'idempotency-key': key } }, token));
    expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201]);
    expect(new Set(answers.map((answer) => answer.headers.location)).size).toBe(3);
    // The same caller and key on another collection is another request.
    const post = await send({ method: 'POST', url: '/api/v1/posts', body: aPost(), headers: { 'idempotency-key': key } }, tokens[0]);
    expect(post.status).toBe(201);
    // And each caller's retry finds its own answer.
    const retry = await send({ method: 'POST', url: '/api/v1/products', body, headers: { 'idempotency-key': key } }, tokens[1]);
    expect(retry.headers.location).toBe(answers[1]!.headers.location);
  });

  it('leaves the key free when the create fails, so a retry can succeed', async () => {
    const key = randomUUID();
    const taken = aPost();
    const holder = await createPost(taken, undefined);
    const clash = await createPost(aPost({ slug: taken.slug }), key);
    expect(clash.status).toBe(422);
    expect(clash.json).toMatchObject({ code: 'CRUD_CONFLICT' });
    expect(await keysStored(key)).toBe(0);
    // The slug is free again: the same request under the same key now creates.
    expect((await send({ method: 'DELETE', url: holder.headers.location! })).status).toBe(204);
    const retry = await createPost(aPost({ slug: taken.slug }), key);
    expect(retry.status).toBe(201);
    expect(await keysStored(key)).toBe(1);
  });

  it('creates one record of concurrent sends with one key: the others replay it or are told it is in flight (409)', async () => {
    const key = randomUUID();
    const body = aPost();
    const answers = await Promise.all(Array.from({ length: 6 }, () => createPost(body, key)));
    const created = answers.filter((answer) => answer.status === 201);
    expect(answers.every((answer) => answer.status === 201 || answer.status === 409)).toBe(true);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((answer) => answer.text)).size).toBe(1);
    for (const conflict of answers.filter((answer) => answer.status === 409)) expect(conflict.json).toMatchObject({ code: 'PLATFORM_IDEMPOTENCY_KEY_IN_FLIGHT' });
    expect(await postsWithSlug(body.slug)).toBe(1);
  });

  it('forgets a key after 24 hours', async () => {
    const key = randomUUID();
    const body = aProduct({ name: `expiring-${randomUUID().slice(0, 8)}` });
    const first = await send({ method: 'POST', url: '/api/v1/products', body, headers: { 'idempotency-key': key } });
    await crud.deps.database.query(`update "crud"."_idempotency" set created_at = now() - interval '24 hours 1 second' where key = $1`, [key]);
    const later = await send({ method: 'POST', url: '/api/v1/products', body, headers: { 'idempotency-key': key } });
    expect([first.status, later.status]).toEqual([201, 201]);
    expect(later.headers.location).not.toBe(first.headers.location);
    expect(await keysStored(key)).toBe(1);
  });

  it.each([
    ['empty', ''],
    ['longer than 255 characters', 'k'.repeat(256)],
    ['with a control character', 'a\tb'],
  ])('refuses a key that is %s (400) and creates nothing', async (_case, key) => {
    const body = aPost();
    const response = await createPost(body, key);
    expect(response.status).toBe(400);
    expect(response.json).toMatchObject({ code: 'PLATFORM_VALIDATION_FAILED', errors: [expect.objectContaining({ path: expect.stringContaining('idempotency-key') })] });
    expect(await postsWithSlug(body.slug)).toBe(0);
  });

  itIf(mode === 'real', ON_REAL_POSTGRES_ONLY)('answers 409 to a retry while the first is still in its transaction, then replays what it committed', async () => {
    const key = randomUUID();
    const body = aPost();
    // The test's own uncommitted insert of the slug: the create waits on it inside its transaction, key claimed.
    const blocker = await holdRowLocks(
      crud.deps.config.DATABASE_URL!,
      'insert into "crud"."post" (title, content, "authorId", slug) values ($1, $2, $3, $4)',
      [body.title, body.content, body.authorId, body.slug],
    );
    const first = createPost(body, key);
    const waiting = await eventually(async () => {
      const rows = await crud.deps.database.query<{ n: number }>(
        "select count(*)::int4 as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like 'insert into \"crud\".\"post\"%'",
      );
      return rows[0]!.n > 0;
    });
    expect(waiting).toBe(true);
    const during = await createPost(body, key);
    expect(during.status).toBe(409);
    expect(during.json).toMatchObject({ code: 'PLATFORM_IDEMPOTENCY_KEY_IN_FLIGHT' });
    await blocker.rollback();
    const created = await first;
    expect(created.status).toBe(201);
    expect(answerOf(await createPost(body, key))).toEqual(answerOf(created));
    expect(await postsWithSlug(body.slug)).toBe(1);
  });
});
