import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { createApp, createLogger } from '@app/platform';

const platformDist = new URL('../dist/index.js', import.meta.url).href;

/**
 * A process that shuts down through closeOnSignals, its stop taking `stopMs`; sends it SIGINT at
 * each of `signalsAt` (ms after it is ready) and resolves with its exit code.
 */
async function exitCodeAfterSignals(stopMs: number, signalsAt: number[]): Promise<number | null> {
  const dir = await mkdtemp(join(tmpdir(), 'signals-'));
  try {
    const script = join(dir, 'main.mjs');
    await writeFile(
      script,
      `import { closeOnSignals, createLogger } from ${JSON.stringify(platformDist)};
closeOnSignals(() => new Promise((resolve) => setTimeout(resolve, ${stopMs})), createLogger({ LOG_LEVEL: 'silent' }), 60000);
setInterval(() => undefined, 1000);
process.stdout.write('ready\\n');
`,
    );
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const ready = await Promise.race([new Promise<boolean>((resolve) => child.stdout.once('data', () => resolve(true))), exited.then(() => false)]);
    if (!ready) throw new Error(`the signal test process exited before it was ready: ${stderr}`);
    const start = Date.now();
    for (const at of signalsAt) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + at - Date.now())));
      child.kill('SIGINT');
    }
    return await exited;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

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

  // Ctrl-C on `npm start`: the terminal signals the whole process group and npm forwards a copy.
  it('treats a SIGINT that follows the first at once as the same Ctrl-C and exits 0 when the stop finishes', async () => {
    expect(await exitCodeAfterSignals(300, [0, 10])).toBe(0);
  });

  it('exits 1 at once on a real second Ctrl-C, without waiting for a stop that hangs', async () => {
    expect(await exitCodeAfterSignals(600_000, [0, 1500])).toBe(1);
  });
});
