import { z } from 'zod';
import type { App } from '../http/app.js';
import type { ServiceReadiness } from '@app/contracts';
import { RELEASE_VERSION } from '../release.js';
import { runCheck, type DependencyCheck } from './checks.js';

export const dependencyReportSchema = z
  .object({
    status: z.enum(['connected', 'disconnected']),
    latency: z.number().describe('Milliseconds; -1 when the check failed'),
    version: z.string().optional(),
  })
  .meta({ id: 'DependencyReport' });

const livenessSchema = z.object({
  status: z.literal('active'),
  service: z.string(),
  version: z.string(),
  date: z.string(),
});

const readinessSchema = z.object({
  status: z.enum(['active', 'degraded']),
  service: z.string(),
  version: z.string(),
  date: z.string(),
  dependencies: z.record(z.string(), dependencyReportSchema),
});

export interface HealthRoutesOptions {
  service: string;
  version: string;
  checks: Record<string, DependencyCheck>;
}

/** A service's readiness report: each check run now; `degraded` when any failed. */
export async function readinessOf(service: string, checks: Record<string, DependencyCheck>): Promise<ServiceReadiness & { ready: boolean }> {
  const names = Object.keys(checks);
  const reports = await Promise.all(names.map((name) => runCheck(checks[name]!)));
  const failed = names.filter((_, i) => reports[i]!.status === 'disconnected');
  return {
    status: failed.length > 0 ? 'degraded' : 'active',
    service,
    version: RELEASE_VERSION,
    date: new Date().toISOString(),
    dependencies: Object.fromEntries(names.map((name, i) => [name, reports[i]!])),
    // Only a required dependency takes the service out of its load balancer.
    ready: !failed.some((name) => checks[name]!.required),
  };
}

/**
 * The Kubernetes probes every process answers. Liveness never looks at a dependency (an
 * outage must not restart every pod); readiness is 503 only when a required one fails.
 */
export async function healthRoutes(app: App, options: HealthRoutesOptions): Promise<void> {
  const base = { service: options.service, version: options.version };
  const config = { auth: 'public' as const };
  app.get(
    '/health/liveness',
    { config, schema: { hide: true, response: { 200: livenessSchema } } },
    async () => ({ status: 'active' as const, ...base, date: new Date().toISOString() }),
  );
  app.get(
    '/health/readiness',
    { config, schema: { hide: true, response: { 200: readinessSchema, 503: readinessSchema } } },
    async (_request, reply) => {
      const { ready, ...report } = await readinessOf(options.service, options.checks);
      reply.code(ready ? 200 : 503);
      return report;
    },
  );
}
