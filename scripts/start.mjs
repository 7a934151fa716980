// `npm start`: the whole platform in one process, from a fresh clone, with no build step to
// wait for. Every workspace's TypeScript is transpiled to its dist/ with esbuild (the same
// file layout tsc emits, in well under a second; type checking stays `npm run typecheck`'s
// job), then the all-in-one entry runs from dist/ like a container would: compiled code
// keeps the process ~70 MB leaner than an on-the-fly TypeScript loader. `npm start` also
// runs node with a 2 MB young generation (--max-semi-space-size=2): a development process
// trades a few more minor GCs for ~30-50 MB less resident memory (measured 272 MB idle
// against 300-333 MB with the 16 MB default), and with one V8 worker thread
// (--v8-pool-size=1): each worker's malloc arena kept 7-16 MB of start-up garbage (WASM
// compilation of PGlite and Prisma) for good; measured 177 MB idle against 207-220 MB.
// package.json's start script also fixes glibc's mmap threshold (MALLOC_MMAP_THRESHOLD_, read
// at exec, so it cannot be set from here): by default glibc raises it to the largest block
// freed so far, after which argon2's 19 MiB blocks and the WASM compilers' come from the heap
// and stay resident once freed; measured 186 MB idle after a sign-in against 253 MB. The
// script `exec`s node so a terminal's Ctrl-C reaches it without a shell in between.
import { join } from 'node:path';
import { transpileWorkspaces } from './transpile.mjs';

await transpileWorkspaces();
await import(join(new URL('..', import.meta.url).pathname, 'apps/all-in-one/dist/main.js'));
