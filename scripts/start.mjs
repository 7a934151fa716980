// `npm start`: the whole platform in one process, from a fresh clone, with no build step to
// wait for. Every workspace's TypeScript is transpiled to its dist/ with esbuild (the same
// file layout tsc emits, in well under a second; type checking stays `npm run typecheck`'s
// job), then the all-in-one entry runs from dist/ like a container would: compiled code
// keeps the process leaner than an on-the-fly TypeScript loader. The script `exec`s node so a
// terminal's Ctrl-C reaches it without a shell in between. package.json's start script sets
// three things, each kept because the bench shows it in the same round (README, Benchmark);
// the Dockerfile sets the same:
// - glibc's mmap threshold fixed at 32 KiB (MALLOC_MMAP_THRESHOLD_, read at exec, so it cannot
//   be set from here). By default glibc raises it to the largest block freed so far, after
//   which argon2's 19 MiB blocks, and the compiler zones of PGlite's and Prisma's WASM, come
//   from the heap and stay resident once freed; below the threshold they are mmapped and
//   returned to the system (idle memory, BENCH_ONLY=nginx,compare).
// - transparent huge pages for what glibc maps (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, by
//   madvise). A block mmapped afresh for every password check was faulted in 4 KiB at a time:
//   a quarter of the all-in-one's CPU in a sign-in was the kernel's, and argon2id cost 35-38
//   ms of CPU instead of 25-27 with two at once. With 2 MiB pages it costs 27-28 ms, and the
//   browser sign-in beside node-oidc-provider went from 0.61-0.64x to 0.68-0.71x (peer
//   phase), for 2-3 MB more idle memory (npm-start phase, three runs each).
// - an 8 MB young generation (--max-semi-space-size=8), not V8's 16 MB: the larger one stays
//   resident at idle, and a cached read spends no measurably more CPU in scavenges at 8 MB.
import { join } from 'node:path';
import { transpileWorkspaces } from './transpile.mjs';

await transpileWorkspaces();
await import(join(new URL('..', import.meta.url).pathname, 'apps/all-in-one/dist/main.js'));
