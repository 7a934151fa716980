import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The release label: the version of the repository's root package.json (the workspace root),
 * found by walking up from this file, so every service of one build reports the same one.
 */
function findReleaseVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  let nearest: string | undefined;
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: string; workspaces?: unknown };
      nearest ??= pkg.version;
      if (pkg.workspaces && pkg.version) return pkg.version;
    } catch {
      // no package.json at this level
    }
    const parent = dirname(dir);
    if (parent === dir) return nearest ?? '0.0.0';
    dir = parent;
  }
}

export const RELEASE_VERSION = findReleaseVersion();
