import { readlink } from 'node:fs/promises';
import { setPriority } from 'node:os';

/** Batches of probes sent before giving up on meeting every pool thread (each batch takes well under a millisecond). */
const MAX_PROBE_BATCHES = 100;

/**
 * Lowers the CPU priority (raises the nice value) of libuv's thread pool, so that the work it
 * runs (argon2 password hashes above all, also zlib and WebCrypto) takes the CPU the event loop
 * leaves rather than the other way round. On two cores beside 40 argon2id sign-ins a second, a
 * cached read kept 97% of its asked rate (79% with the pool at the loop's priority); what is
 * left of its p99 there is the sign-ins' own work on the loop (the embedded database's queries).
 *
 * Linux only (elsewhere it answers `[]` and changes nothing), where a thread's nice value is
 * its own. The pool threads are found by asking them: an asynchronous `readlink` of
 * `/proc/thread-self` runs on a pool thread and names that thread. Probes go out in batches
 * until every thread of the pool (UV_THREADPOOL_SIZE, libuv's default 4) has answered; the
 * pool starts all its threads at its first use, and V8's own helper threads (garbage
 * collection, compilation) are never touched, so the loop never waits on a starved one.
 *
 * Answers the thread ids it changed.
 */
export async function lowerThreadPoolPriority(nice: number): Promise<number[]> {
  if (process.platform !== 'linux' || nice <= 0) return [];
  // libuv's own variable, read by libuv itself at the pool's start; not platform configuration.
  // eslint-disable-next-line no-restricted-properties
  const poolSize = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  const found = new Set<number>();
  for (let batch = 0; batch < MAX_PROBE_BATCHES && found.size < poolSize; batch++) {
    const links = await Promise.all(Array.from({ length: poolSize * 8 }, () => readlink('/proc/thread-self')));
    for (const link of links) found.add(Number(link.slice(link.lastIndexOf('/') + 1)));
  }
  found.delete(process.pid);
  for (const tid of found) setPriority(tid, nice);
  return [...found];
}
