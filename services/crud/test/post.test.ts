import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { testModes } from '@app/testing';
import { aPost, ISO, startCrud, UUID, type CrudHarness, type TestRequest, type Transport } from './helper.js';

const cases = testModes().flatMap((mode) => (['inject', 'gateway'] as Transport[]).map((transport) => [mode, transport] as const));

describe.each(cases)('posts (%s, through %s)', (mode, transport) => {
  let crud: CrudHarness;
  const send = (request: TestRequest) => crud.send({ ...request, headers: { authorization: `Bearer ${crud.token}`, ...request.headers } });
  const create = async (body = aPost()) => {
    const response = await send({ method: 'POST', url: '/api/v1/posts', body });
    expect(response.status).toBe(201);
    return (response.json as Record<string, unknown>[])[0]!;
  };

  beforeAll(async () => {
    crud = await startCrud(mode, transport);
  });
  afterAll(() => crud.close());

  it('answers ping without a token', async () => {
    const response = await crud.send({ method: 'GET', url: '/api/v1/posts/ping' });
    expect(response.status).toBe(200);
    expect(response.text).toBe('');
  });

  it('creates a post: 201 with the record', async () => {
    const body = aPost();
    const response = await send({ method: 'POST', url: '/api/v1/posts', body });
    expect(response.status).toBe(201);
    expect(response.json).toEqual([
      { id: expect.stringMatching(UUID), ...body, activated: true, createdAt: expect.stringMatching(ISO), updatedAt: expect.stringMatching(ISO) },
    ]);
  });

  it('answers 422 when the slug is already taken, and stores nothing', async () => {
    const first = await create();
    const response = await send({ method: 'POST', url: '/api/v1/posts', body: aPost({ slug: first.slug, title: 'Another title' }) });
    expect(response.status).toBe(422);
    expect(response.json).toMatchObject({
      type: 'urn:problem:crud-conflict',
      title: 'Unprocessable Content',
      status: 422,
      code: 'CRUD_CONFLICT',
      detail: 'The post was not saved: another post already has the same slug.',
    });
    const list = await send({ method: 'GET', url: `/api/v1/posts?slug=${String(first.slug)}` });
    expect((list.json as unknown[]).length).toBe(1);
  });

  it('answers 422 when an update would take another post’s slug, and changes nothing', async () => {
    const taken = await create();
    const other = await create();
    const response = await send({ method: 'PUT', url: `/api/v1/posts/${other.id}`, body: { slug: taken.slug, title: 'Changed title' } });
    expect(response.status).toBe(422);
    expect(response.json).toMatchObject({ code: 'CRUD_CONFLICT' });
    expect((await send({ method: 'GET', url: `/api/v1/posts/${other.id}` })).json).toEqual([other]);
  });

  it('updates a post keeping its own slug', async () => {
    const post = await create();
    const response = await send({ method: 'PUT', url: `/api/v1/posts/${post.id}`, body: { slug: post.slug, content: 'A longer content now.' } });
    expect(response.status).toBe(200);
    expect(response.json).toEqual([{ ...post, content: 'A longer content now.', updatedAt: expect.stringMatching(ISO) }]);
  });

  it.each([
    ['a title of 4 characters', { title: 'Four' }, 'body.title'],
    ['a title of 256 characters', { title: 'x'.repeat(256) }, 'body.title'],
    ['content of 9 characters', { content: 'too short' }, 'body.content'],
    ['an authorId of 37 characters', { authorId: 'x'.repeat(37) }, 'body.authorId'],
    ['a slug with upper case', { slug: 'Hello-World' }, 'body.slug'],
    ['a slug with a space', { slug: 'hello world' }, 'body.slug'],
    ['a slug of 2 characters', { slug: 'ab' }, 'body.slug'],
    ['a slug of 256 characters', { slug: 'a'.repeat(256) }, 'body.slug'],
  ])('answers 400 to %s', async (_what, overrides, path) => {
    const response = await send({ method: 'POST', url: '/api/v1/posts', body: aPost(overrides) });
    expect(response.status).toBe(400);
    expect((response.json as { errors: { path: string }[] }).errors.map((error) => error.path)).toEqual([path]);
  });

  it('accepts the longest title, slug and authorId', async () => {
    await create(aPost({ title: 'x'.repeat(255), slug: `${randomUUID()}-${'a'.repeat(218)}`, authorId: 'x'.repeat(36) }));
  });

  it('answers 400 naming every missing required column', async () => {
    const response = await send({ method: 'POST', url: '/api/v1/posts', body: {} });
    expect((response.json as { errors: { path: string }[] }).errors.map((error) => error.path).sort()).toEqual([
      'body.authorId',
      'body.content',
      'body.slug',
      'body.title',
    ]);
  });

  it('filters by author and deletes', async () => {
    const authorId = randomUUID();
    const mine = [await create(aPost({ authorId })), await create(aPost({ authorId }))];
    const listed = await send({ method: 'GET', url: `/api/v1/posts?authorId=${authorId}&sort=createdAt` });
    expect(listed.json).toEqual(mine);
    expect((await send({ method: 'DELETE', url: `/api/v1/posts/${mine[0]!.id}` })).status).toBe(204);
    expect((await send({ method: 'GET', url: `/api/v1/posts?authorId=${authorId}` })).json).toEqual([mine[1]]);
  });

  it('answers 401 without a token', async () => {
    const response = await crud.send({ method: 'GET', url: '/api/v1/posts' });
    expect(response.status).toBe(401);
    expect(response.headers['www-authenticate']).toBe('Bearer realm="api-platform"');
  });
});
