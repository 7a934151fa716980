// Run by the jest preset before every test file: every test and hook gets the start-up budget
// by default (the projects mode ignores a testTimeout set in the preset or in a project).
// Imports nothing else, so a unit suite pays nothing for it.
import { jest } from '@jest/globals';
import { START_BUDGET_MS } from './budgets.js';

jest.setTimeout(START_BUDGET_MS);
