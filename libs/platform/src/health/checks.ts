import type { Cache } from '../cache/cache.js';
import type { Database } from '../db/database.js';

export interface DependencyReport {
  status: 'connected' | 'disconnected';
  /** Round trip in milliseconds; -1 when the check failed. */
  latency: number;
  version?: string;
}

export interface DependencyCheck {
  /** A required dependency failing makes the service unready (503); an optional one only degrades it. */
  required: boolean;
  probe(): Promise<{ version?: string }>;
}

/** A dependency that does not answer in this time counts as disconnected. */
export const CHECK_TIMEOUT_MS = 2_000;

export async function runCheck(check: DependencyCheck, timeoutMs = CHECK_TIMEOUT_MS): Promise<DependencyReport> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const result = await Promise.race([
      check.probe(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('health check timed out')), timeoutMs);
      }),
    ]);
    const latency = Math.round((performance.now() - started) * 100) / 100;
    return { status: 'connected', latency, ...(result.version ? { version: result.version } : {}) };
  } catch {
    return { status: 'disconnected', latency: -1 };
  } finally {
    clearTimeout(timer);
  }
}

export const databaseCheck = (database: Database): DependencyCheck => ({
  required: true,
  probe: async () => ({ version: await database.version() }),
});

/** The cache fails open, so its outage degrades a service without taking it out of rotation. */
export const cacheCheck = (cache: Cache): DependencyCheck => ({
  required: false,
  probe: () => cache.ping(),
});
