import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
// @ts-expect-error -- a plain .mjs script, without type declarations
import { completeLockfile, platformOf } from '../../scripts/complete-lockfile.mjs';

describe('package-lock.json', () => {
  it('has an entry for every optional platform package, so npm ci accepts it (npm run lock:complete)', () => {
    const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8'));
    expect(completeLockfile(lock)).toEqual([]);
  });

  it.each([
    ['@swc/core-linux-arm-gnueabihf', { os: ['linux'], cpu: ['arm'], libc: ['glibc'] }],
    ['@unrs/resolver-binding-linux-riscv64-musl', { os: ['linux'], cpu: ['riscv64'], libc: ['musl'] }],
    ['@turbo/windows-64', { os: ['win32'], cpu: ['x64'] }],
    ['@swc/core-darwin-arm64', { os: ['darwin'], cpu: ['arm64'] }],
    ['@swc/core', undefined],
  ])('reads the platform of %s from its name', (name, platform) => {
    expect(platformOf(name)).toEqual(platform);
  });
});
