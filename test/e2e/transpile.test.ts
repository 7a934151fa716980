import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
// @ts-expect-error -- a plain .mjs script, without type declarations
import { transpileWorkspaces } from '../../scripts/transpile.mjs';

describe('transpiling the workspaces before npm start', () => {
  let root: string;
  const source = (path: string, text: string) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  const output = (path: string) => readFileSync(join(root, path), 'utf8');
  /** Moves a file's modification time `seconds` into the future, as an edit after the last transpile does. */
  const later = (path: string, seconds: number) => {
    const when = new Date(Date.now() + seconds * 1000);
    utimesSync(join(root, path), when, when);
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'transpile-'));
    source('libs/demo/src/index.ts', 'export const answer: number = 1;\n');
    source('libs/demo/src/deep/more.ts', 'export const more = (n: number): number => n + 1;\n');
    source('libs/demo/src/index.test.ts', 'throw new Error("tests are not transpiled");\n');
    source('services/other/src/main.ts', 'export const other = "x";\n');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('writes each source as JavaScript in its dist/, with the same layout, and no tests', async () => {
    await transpileWorkspaces(root);
    expect(output('libs/demo/dist/index.js')).toContain('answer = 1');
    expect(output('libs/demo/dist/deep/more.js')).toContain('n + 1');
    expect(output('services/other/dist/main.js')).toContain('other = "x"');
    expect(statSync(join(root, 'libs/demo/dist/index.test.js'), { throwIfNoEntry: false })).toBeUndefined();
  });

  it('leaves an up-to-date dist/ alone and transpiles a workspace again once a source changed', async () => {
    await transpileWorkspaces(root);
    const before = statSync(join(root, 'services/other/dist/main.js')).mtimeMs;
    await transpileWorkspaces(root);
    expect(statSync(join(root, 'services/other/dist/main.js')).mtimeMs).toBe(before);

    source('libs/demo/src/index.ts', 'export const answer: number = 2;\n');
    later('libs/demo/src/index.ts', 5);
    await transpileWorkspaces(root);
    expect(output('libs/demo/dist/index.js')).toContain('answer = 2');
    // The other workspace was up to date.
    expect(statSync(join(root, 'services/other/dist/main.js')).mtimeMs).toBe(before);
  });

  it('transpiles a source added since, and one whose output was deleted', async () => {
    await transpileWorkspaces(root);
    source('services/other/src/added.ts', 'export const added = true;\n');
    later('services/other/src/added.ts', 5);
    rmSync(join(root, 'libs/demo/dist/deep/more.js'));
    await transpileWorkspaces(root);
    expect(output('services/other/dist/added.js')).toContain('added = true');
    expect(output('libs/demo/dist/deep/more.js')).toContain('n + 1');
  });
});
