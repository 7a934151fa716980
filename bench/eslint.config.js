import root from '../eslint.config.js';

// The bench is a tool run from a terminal: its knobs are environment variables (BENCH_*).
export default [...root, { files: ['**/*.ts', '**/*.mjs'], rules: { 'no-restricted-properties': 'off' } }];
