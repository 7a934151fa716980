import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const source = fileURLToPath(new URL('../src/logger.ts', import.meta.url));

/** A process of its own that logs `lines` JSON lines to stdout (no terminal), then runs `then`. */
async function logThen(lines: number, then: string) {
  const script = `
    import { createLogger } from ${JSON.stringify(source)};
    const logger = createLogger({ LOG_LEVEL: 'info', NODE_ENV: 'production' });
    for (let i = 0; i < ${lines}; i++) logger.info({ i }, 'line');
    ${then}
  `;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]);
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { i: number }).i);
}

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('collected JSON logs on stdout (batched writes)', () => {
  it('writes every line, in order, when the process exits at once', async () => {
    expect(await logThen(3, 'process.exit(0);')).toEqual(upTo(3));
    // Past several 64 KB batches, with writes still in flight.
    expect(await logThen(5_000, 'process.exit(0);')).toEqual(upTo(5_000));
  });

  it('has the last line out when the process crashes right after logging it', async () => {
    await expect(logThen(5, "throw new Error('boom');")).rejects.toMatchObject({ stdout: expect.stringContaining('"i":4') });
    await expect(logThen(5, "setTimeout(() => { throw new Error('boom'); }, 0);")).rejects.toMatchObject({ stdout: expect.stringContaining('"i":4') });
    await expect(logThen(5, "Promise.reject(new Error('boom'));")).rejects.toMatchObject({ stdout: expect.stringContaining('"i":4') });
  });

  it('has the last line out when a signal nobody handles ends the process, which still ends by that signal', async () => {
    for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
      await expect(logThen(5, `process.kill(process.pid, '${signal}'); setTimeout(() => undefined, 5_000);`)).rejects.toMatchObject({
        signal,
        stdout: expect.stringContaining('"i":4'),
      });
    }
  });

  it("keeps a process's own signal handler: the lines are out and the handler runs on", async () => {
    const lines = await logThen(5, "process.on('SIGTERM', () => { logger.info({ i: 5 }, 'line'); process.exit(0); }); process.kill(process.pid, 'SIGTERM'); setTimeout(() => undefined, 5_000);");
    expect(lines).toEqual(upTo(6));
  });

  it("writes a quiet process's lines within a moment, not only at exit", async () => {
    // SIGKILL runs no handler at all: the line is out only if the periodic flush wrote it.
    await expect(logThen(1, "await new Promise((resolve) => setTimeout(resolve, 400)); process.kill(process.pid, 'SIGKILL');")).rejects.toMatchObject({
      signal: 'SIGKILL',
      stdout: expect.stringContaining('"i":0'),
    });
  });
});
