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

  it("writes a quiet process's lines within a moment, not only at exit", async () => {
    // SIGKILL runs no exit handler: the line is out only if the periodic flush wrote it.
    await expect(logThen(1, "await new Promise((resolve) => setTimeout(resolve, 400)); process.kill(process.pid, 'SIGKILL');")).rejects.toMatchObject({
      signal: 'SIGKILL',
      stdout: expect.stringContaining('"i":0'),
    });
  });

  it('writes what was logged before an uncaught error ends the process', async () => {
    await expect(logThen(5, "setTimeout(() => { throw new Error('boom'); }, 0);")).rejects.toMatchObject({ stdout: expect.stringContaining('"i":4') });
  });
});
