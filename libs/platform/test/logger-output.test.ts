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

describe('collected JSON logs on stdout', () => {
  it('writes every line, in order, when the process exits at once', async () => {
    expect(await logThen(3, 'process.exit(0);')).toEqual(upTo(3));
    expect(await logThen(5_000, 'process.exit(0);')).toEqual(upTo(5_000));
  });

  it('has the last line out when the process crashes right after logging it', async () => {
    // No handler, no timer: the line is out before logger.info returns, or it is lost.
    await expect(logThen(5, "throw new Error('boom');")).rejects.toMatchObject({ stdout: expect.stringContaining('"i":4') });
    await expect(logThen(5, "setTimeout(() => { throw new Error('boom'); }, 0);")).rejects.toMatchObject({ stdout: expect.stringContaining('"i":4') });
  });

  it('has the last line out when a signal ends the process right after logging it', async () => {
    // Neither SIGTERM's default action nor SIGKILL runs any exit handler.
    for (const signal of ['SIGTERM', 'SIGKILL']) {
      await expect(logThen(5, `process.kill(process.pid, '${signal}');`)).rejects.toMatchObject({ signal, stdout: expect.stringContaining('"i":4') });
    }
  });
});
