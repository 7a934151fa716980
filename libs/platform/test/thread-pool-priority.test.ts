import { describe, expect } from '@jest/globals';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { itIf } from '@app/testing';

const run = promisify(execFile);
const source = fileURLToPath(new URL('../src/thread-pool-priority.ts', import.meta.url));

/**
 * In a process of its own (the nice value of a thread only goes up without privileges, and
 * jest's own pool must keep its priority): lowers the pool, then reports every thread's nice
 * value from /proc, which the kernel keeps per thread (field 19 of `stat`).
 */
async function probe(env: Record<string, string>, nice: number) {
  const script = `
    import { readdirSync, readFileSync } from 'node:fs';
    import { lowerThreadPoolPriority } from ${JSON.stringify(source)};
    const changed = await lowerThreadPoolPriority(${nice});
    const niceOf = (tid) => Number(readFileSync('/proc/self/task/' + tid + '/stat', 'utf8').split(') ')[1].split(' ')[16]);
    const threads = readdirSync('/proc/self/task').map(Number).map((tid) => ({ tid, nice: niceOf(tid) }));
    console.log(JSON.stringify({ pid: process.pid, changed, threads }));
  `;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { ...process.env, ...env } });
  return JSON.parse(stdout) as { pid: number; changed: number[]; threads: { tid: number; nice: number }[] };
}

describe.each([process.platform === 'linux' ? 'linux' : 'skipped'])('lowering the thread pool below the event loop (%s)', (platform) => {
  const maybe = itIf(platform === 'linux', 'reads threads from /proc: needs Linux');

  maybe('finds every pool thread, lowers exactly those, and leaves the event loop and V8 helper threads alone', async () => {
    const { pid, changed, threads } = await probe({ UV_THREADPOOL_SIZE: '6' }, 15);
    expect(new Set(changed).size).toBe(6);
    expect(changed).not.toContain(pid);
    // The rest keep the priority the process started with (0, unless the runner was niced).
    const started = threads.find(({ tid }) => tid === pid)!.nice;
    for (const { tid, nice } of threads) expect([tid, nice]).toEqual([tid, changed.includes(tid) ? 15 : started]);
    // Besides the main thread, V8's platform workers (garbage collection, compilation) keep it too.
    expect(threads.filter(({ tid }) => !changed.includes(tid)).length).toBeGreaterThan(1);
  });

  maybe('changes nothing with a nice value of 0', async () => {
    const { changed, threads } = await probe({}, 0);
    expect(changed).toEqual([]);
    expect(new Set(threads.map(({ nice }) => nice)).size).toBe(1);
  });
});
