// `npm start`: the whole platform in one process, from a fresh clone, with no build step to
// wait for. Every workspace's TypeScript is transpiled to its dist/ with esbuild (the same
// file layout tsc emits, in well under a second; type checking stays `npm run typecheck`'s
// job), then the all-in-one entry runs from dist/ like a container would: compiled code
// keeps the process leaner than an on-the-fly TypeScript loader. The script `exec`s node so a
// terminal's Ctrl-C reaches it without a shell in between. package.json's start script sets
// two things, each kept because the bench's compare run (BENCH_ONLY=nginx,compare) shows it in
// the idle memory of the same round (README, Benchmark); the Dockerfile sets the same:
// - glibc's mmap threshold fixed at 32 KiB (MALLOC_MMAP_THRESHOLD_, read at exec, so it cannot
//   be set from here). By default glibc raises it to the largest block freed so far, after
//   which argon2's 19 MiB blocks, and the compiler zones of PGlite's and Prisma's WASM, come
//   from the heap and stay resident once freed; below the threshold they are mmapped and
//   returned to the system.
// - an 8 MB young generation (--max-semi-space-size=8), not V8's 16 MB: the larger one stays
//   resident at idle, and a cached read spends no measurably more CPU in scavenges at 8 MB.
import { join } from 'node:path';
import { transpileWorkspaces } from './transpile.mjs';

await transpileWorkspaces();
await import(join(new URL('..', import.meta.url).pathname, 'apps/all-in-one/dist/main.js'));
