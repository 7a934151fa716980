import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { BusMessage } from '@app/platform';
import { eventually, testModes } from '@app/testing';
import { aPost, startCrud, type CrudHarness } from './helper.js';

describe.each(testModes())('events (%s)', (mode) => {
  let crud: CrudHarness;
  const received: BusMessage[] = [];

  beforeAll(async () => {
    crud = await startCrud(mode);
    await crud.deps.bus.subscribe('crud.>', async (message) => void received.push(message), { group: 'crud-events-test' });
  });
  afterAll(() => crud.close());

  it('publishes crud.post.created, updated and deleted through the outbox, once each', async () => {
    const headers = { authorization: `Bearer ${crud.token}` };
    const created = await crud.send({ method: 'POST', url: '/api/v1/posts', headers, body: aPost() });
    const [post] = created.json as { id: string; createdAt: string }[];
    const updated = await crud.send({ method: 'PUT', url: `/api/v1/posts/${post!.id}`, headers, body: { title: 'A new title' } });
    const [after] = updated.json as { updatedAt: string }[];
    await crud.send({ method: 'DELETE', url: `/api/v1/posts/${post!.id}`, headers });
    // A rejected create (a taken slug) commits nothing, so it publishes nothing.
    await crud.send({ method: 'POST', url: '/api/v1/posts', headers, body: aPost({ slug: 'taken-slug' }) });
    await crud.send({ method: 'POST', url: '/api/v1/posts', headers, body: aPost({ slug: 'taken-slug' }) });

    expect(await eventually(async () => received.length >= 4)).toBe(true);
    const mine = received.filter((message) => (message.data as { id: string }).id === post!.id);
    expect(mine.map((message) => [message.subject, message.data])).toEqual([
      ['crud.post.created', { domain: 'post', id: post!.id, occurredAt: post!.createdAt }],
      ['crud.post.updated', { domain: 'post', id: post!.id, occurredAt: after!.updatedAt }],
      ['crud.post.deleted', { domain: 'post', id: post!.id, occurredAt: expect.any(String) }],
    ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(received.map((message) => message.subject)).toEqual(['crud.post.created', 'crud.post.updated', 'crud.post.deleted', 'crud.post.created']);
  });
});
