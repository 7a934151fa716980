// Every workspace's TypeScript transpiled to its dist/ with esbuild: the same file layout tsc
// emits, in well under a second, with no type check (that stays `npm run typecheck`'s job).
// `npm start` and `npm run start:split` run it first, and `npm ci` (postinstall) once, so a
// fresh clone needs no build step before `npm start` or `npm test`. A workspace whose dist/
// already holds every source's output, newer than the source and than this script, is left as
// it is: a second `npm start` then skips esbuild (~0.5 s on a slow 2-core machine).
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = new URL('..', import.meta.url).pathname;

function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

const modified = (path) => statSync(path, { throwIfNoEntry: false })?.mtimeMs;

/** Whether each of `entryPoints` has its .js in `dir`/dist, written after it and after this script. */
function upToDate(dir, entryPoints) {
  const script = modified(fileURLToPath(import.meta.url));
  return entryPoints.every((source) => {
    const output = modified(join(dir, 'dist', relative(join(dir, 'src'), source)).replace(/\.ts$/, '.js'));
    return output !== undefined && output >= modified(source) && output >= script;
  });
}

/**
 * Transpiles the workspaces under `root` (libs/*, services/*, apps/*), and the workspace
 * directories in `more` (bench/), whose dist/ is out of date.
 */
export async function transpileWorkspaces(root = ROOT, more = []) {
  const stale = ['libs', 'services', 'apps']
    .filter((group) => statSync(join(root, group), { throwIfNoEntry: false })?.isDirectory())
    .flatMap((group) =>
      readdirSync(join(root, group), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => join(root, group, entry.name))
        .filter((dir) => statSync(join(dir, 'src'), { throwIfNoEntry: false })?.isDirectory()),
    )
    .concat(more)
    .map((dir) => ({ dir, entryPoints: sources(join(dir, 'src')) }))
    .filter(({ dir, entryPoints }) => !upToDate(dir, entryPoints));
  if (stale.length === 0) return;
  const { build, stop } = await import('esbuild');
  await Promise.all(
    stale.map(({ dir, entryPoints }) =>
      build({
        entryPoints,
        outdir: join(dir, 'dist'),
        outbase: join(dir, 'src'),
        format: 'esm',
        platform: 'node',
        target: 'node20',
        sourcemap: true,
        logLevel: 'error',
      }),
    ),
  );
  // esbuild's compiler runs as a child process; it has nothing left to do.
  stop();
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await transpileWorkspaces();
