// Completes package-lock.json with the optional per-platform packages npm could not
// describe. The registry this project is built against serves native builds only for the
// platforms it uses; npm then writes a lock that names e.g. @swc/core-darwin-arm64 as an
// optional dependency without an entry for it, and `npm ci` rejects that lock on every
// machine. Each missing entry gets the version its parent asks for and the os/cpu/libc its
// name declares (the packages' own naming convention), so npm skips it on other platforms
// and fetches it by name and version where it applies.
// Run after any `npm install` that changes the lock: `npm run lock:complete`.
import { readFileSync, writeFileSync } from 'node:fs';

const OS = { darwin: 'darwin', linux: 'linux', win32: 'win32', windows: 'win32', android: 'android', freebsd: 'freebsd', openharmony: 'openharmony', sunos: 'sunos' };
const CPU = { arm64: 'arm64', x64: 'x64', 64: 'x64', arm: 'arm', ia32: 'ia32', ppc64: 'ppc64', s390x: 's390x', riscv64: 'riscv64', loong64: 'loong64', wasm32: 'wasm32' };

/** os, cpu and libc from a platform package name such as `@swc/core-linux-arm-gnueabihf`. */
export function platformOf(name) {
  const tokens = name.split('/').pop().split('-');
  const osIndex = tokens.findIndex((token) => token in OS);
  if (osIndex < 0) return undefined;
  const cpu = CPU[tokens[osIndex + 1]];
  if (!cpu) return undefined;
  const abi = tokens[osIndex + 2] ?? '';
  const libc = abi.startsWith('gnu') ? ['glibc'] : abi.startsWith('musl') ? ['musl'] : undefined;
  return { os: [OS[tokens[osIndex]]], cpu: [cpu], ...(libc && OS[tokens[osIndex]] === 'linux' ? { libc } : {}) };
}

export function completeLockfile(lock) {
  const added = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
      const platform = platformOf(name);
      if (!platform) continue;
      const base = path === '' ? '' : `${path}/`;
      const nested = `${base}node_modules/${name}`;
      if (lock.packages[nested] || lock.packages[`node_modules/${name}`]) continue;
      lock.packages[`node_modules/${name}`] = {
        version,
        ...(entry.dev ? { dev: true } : {}),
        optional: true,
        ...platform,
      };
      added.push(`${name}@${version}`);
    }
  }
  lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
  return added;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = new URL('../package-lock.json', import.meta.url);
  const lock = JSON.parse(readFileSync(file, 'utf8'));
  const added = completeLockfile(lock);
  writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
  console.log(added.length ? `lock: added ${added.length} platform entries` : 'lock: complete');
}
