// `npm run bench`: transpiles the workspaces (this one too) as `npm start` does, then runs the
// bench from bench/dist (src/main.ts says what it measures; src/settings.ts its knobs).
import { transpileWorkspaces } from '../scripts/transpile.mjs';

await transpileWorkspaces(undefined, [new URL('.', import.meta.url).pathname]);
await import('./dist/main.js');
