import { statfs } from 'node:fs/promises';
import type { ServiceReadiness } from '@app/contracts';
import { CHECK_TIMEOUT_MS, runCheck, type DependencyCheck } from '@app/platform';
import type { ServiceReport } from './schemas.js';

/** Asks one service for its readiness; an unreachable or malformed answer is `disconnected`. */
export async function probeService(readiness: () => Promise<ServiceReadiness>, timeoutMs = CHECK_TIMEOUT_MS): Promise<ServiceReport> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const report = await Promise.race([
      readiness(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('readiness timed out')), timeoutMs);
      }),
    ]);
    const latency = Math.round((performance.now() - started) * 100) / 100;
    return { status: report.status === 'active' ? 'active' : 'degraded', latency };
  } catch {
    return { status: 'disconnected', latency: -1 };
  } finally {
    clearTimeout(timer);
  }
}

export interface ReadinessInputs {
  database: DependencyCheck;
  cache: DependencyCheck;
  /** Each reported service's readiness: in-process or over HTTP (ServiceClients.readiness). */
  services: Record<string, () => Promise<ServiceReadiness>>;
  dataDir: string;
}

/** Builds the public readiness report; `degraded` when any dependency or service fails. */
export async function readinessReport(inputs: ReadinessInputs) {
  const names = Object.keys(inputs.services);
  const [database, cache, disk, ...serviceReports] = await Promise.all([
    runCheck(inputs.database),
    runCheck(inputs.cache),
    statfs(inputs.dataDir).catch(() => statfs('.')),
    ...names.map((name) => probeService(inputs.services[name]!)),
  ]);
  const services = Object.fromEntries(names.map((name, i) => [name, serviceReports[i]!]));
  const healthy =
    database.status === 'connected' &&
    cache.status === 'connected' &&
    serviceReports.every((report) => report.status === 'active');
  const { rss, heapTotal, heapUsed, external } = process.memoryUsage();
  return {
    status: healthy ? ('active' as const) : ('degraded' as const),
    uptime: Math.round(process.uptime() * 1000) / 1000,
    memory: { rss, heapTotal, heapUsed, external },
    disk: { free: disk.bavail * disk.bsize, total: disk.blocks * disk.bsize },
    dependencies: { database, cache },
    services,
  };
}
