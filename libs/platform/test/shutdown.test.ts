import { describe, expect, it } from '@jest/globals';
import { createApp, createLogger } from '@app/platform';

describe('graceful shutdown', () => {
  it('lets an in-flight request finish, then refuses new connections', async () => {
    const app = await createApp({ name: 'drain', version: '1', logger: createLogger({ LOG_LEVEL: 'silent' }), bodyLimit: 1024 });
    let release!: () => void;
    const started = new Promise<void>((resolve) => {
      app.get('/slow', { config: { auth: 'public' } }, async () => {
        resolve();
        await new Promise<void>((done) => (release = done));
        return { finished: true };
      });
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const inFlight = fetch(`${url}/slow`);
    await started;
    const closing = app.close();
    // The listener is closed at once: a new connection is refused while the old request runs.
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(fetch(`${url}/slow`)).rejects.toThrow();
    release();
    const response = await inFlight;
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ finished: true });
    await closing;
  });
});
