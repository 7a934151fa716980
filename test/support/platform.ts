// The whole platform's configuration for tests: every service's variables (the all-in-one's
// PLATFORM_CONFIG) beside the shared ones, parsed as `npm start` and the split launcher parse them.
import { PLATFORM_CONFIG } from '@app/all-in-one';
import type { Env } from '@app/platform';
import { openTestDependencies, testConfig, type TestMode } from '@app/testing';

/** A test config of the whole platform (see `testConfig`). */
export const platformTestConfig = (overrides: Env = {}) => testConfig(overrides, PLATFORM_CONFIG);

/** Test dependencies whose config is the whole platform's (see `openTestDependencies`). */
export const openPlatformDependencies = (mode: TestMode, overrides: Env = {}) => openTestDependencies(mode, overrides, PLATFORM_CONFIG);

export type PlatformDependencies = Awaited<ReturnType<typeof openPlatformDependencies>>;
