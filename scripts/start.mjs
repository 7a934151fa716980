// `npm start`: the whole platform in one process, from a fresh clone, with no build step to
// wait for. Every workspace's TypeScript is transpiled to its dist/ with esbuild (the same
// file layout tsc emits, in well under a second; type checking stays `npm run typecheck`'s
// job), then the all-in-one entry runs from dist/ like a container would: compiled code
// keeps the process ~70 MB leaner than an on-the-fly TypeScript loader. The script `exec`s
// node so a terminal's Ctrl-C reaches it without a shell in between. package.json's start
// script sets, each measured on 2 cores (idle: the bench's 100 requests, then 5 s):
// - an 8 MB young generation (--max-semi-space-size=8), not V8's 16 MB, which kept 15-20 MB
//   more resident at idle; at 2 MB a cached read spent ~13% of its CPU in scavenges, and 8 MB
//   takes 13-16% off that CPU (29-30 against 34-35 us, side by side) for 0-8 MB more at idle;
// - one V8 worker thread (--v8-pool-size=1): each worker's malloc arena kept 7-16 MB of
//   start-up garbage (WASM compilation of PGlite and Prisma) for good; 177 MB idle against 207-220;
// - glibc's mmap threshold fixed at 32 KiB (MALLOC_MMAP_THRESHOLD_, read at exec, so it cannot
//   be set from here). By default glibc raises it to the largest block freed so far, after
//   which argon2's 19 MiB blocks come from the heap and stay resident once freed (186 MB idle
//   after a sign-in against 253 MB). At 128 KiB the V8 worker's arena still kept 17-31 MB of
//   compiler zones, a different amount each start; at 32 KiB those are mmapped and returned:
//   node idles at 165-176 MB against 182-195, with no change in a cached read's CPU.
import { join } from 'node:path';
import { transpileWorkspaces } from './transpile.mjs';

await transpileWorkspaces();
await import(join(new URL('..', import.meta.url).pathname, 'apps/all-in-one/dist/main.js'));
