// The `replicas` topology of the end-to-end suites (issue 12): split mode as `npm run
// start:split -- --replicas 2` runs it, every service as two processes of its own behind the
// gateway, on the same slice of the real servers as the suite's own dependencies.
import type { Env } from '@app/platform';
import { startSplit, type SplitCluster, type SplitOptions } from '@app/split';
import { REAL, testModes, type TestMode } from '@app/testing';
import type { PlatformDependencies } from './platform.js';

export type TestDependencies = PlatformDependencies;

/** Each in-process topology in each mode a suite runs in, and `replicas` in real mode (it needs the real servers). */
export function topologyCases<T extends string>(inProcess: readonly T[]): (readonly [T | 'replicas', TestMode])[] {
  return testModes().flatMap((mode) => [...inProcess, ...(mode === 'real' ? (['replicas'] as const) : [])].map((topology) => [topology, mode] as const));
}

/**
 * What every split cluster a suite starts sets for its processes: a pool of 4 connections each
 * (DATABASE_POOL_MAX). At the default 10, one cluster of two replicas (ten processes) could
 * hold all of Postgres' default max_connections (100) alone, and two suites' clusters at once
 * (jest runs two) got "too many clients" as 503s. deploy/k8s sizes it the same way.
 */
export const CLUSTER_ENV = { DATABASE_POOL_MAX: '4' } as const;

/**
 * Two replicas of every service and the gateway in front, as child processes sharing `deps`'s
 * database, Redis key prefix and JetStream stream, so the suite reads and subscribes to what
 * they write. `env` adds to (or overrides) that for every process; `output` gets their lines
 * (default: dropped).
 */
export async function startReplicas(
  deps: TestDependencies,
  options: { env: Env; output?: SplitOptions['output']; onPlanned?: SplitOptions['onPlanned'] },
): Promise<SplitCluster> {
  if (!REAL.redisUrl || !REAL.natsUrl || !deps.config.DATABASE_URL) throw new Error('the replicas topology needs the real servers');
  return startSplit({
    replicas: 2,
    port: 0,
    output: options.output ?? (() => undefined),
    onPlanned: options.onPlanned,
    env: {
      DATABASE_URL: deps.config.DATABASE_URL,
      REDIS_URL: REAL.redisUrl,
      NATS_URL: REAL.natsUrl,
      CACHE_KEY_PREFIX: deps.cacheKeyPrefix,
      NATS_STREAM: deps.natsStream,
      LOG_LEVEL: 'warn',
      TRUST_PROXY: deps.config.TRUST_PROXY,
      ...CLUSTER_ENV,
      ...options.env,
    },
  });
}
