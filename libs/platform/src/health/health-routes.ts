import { z } from 'zod';
import type { App } from '../http/app.js';
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

/**
 * The Kubernetes probes every service answers. Liveness never looks at a dependency (an
 * outage must not restart every pod); readiness is 503 only when a required one fails.
 */
export async function healthRoutes(app: App, options: HealthRoutesOptions): Promise<void> {
  const base = { service: options.service, version: options.version };
  app.get(
    '/health/liveness',
    { schema: { hide: true, response: { 200: livenessSchema } } },
    async () => ({ status: 'active' as const, ...base, date: new Date().toISOString() }),
  );
  app.get(
    '/health/readiness',
    { schema: { hide: true, response: { 200: readinessSchema, 503: readinessSchema } } },
    async (_request, reply) => {
      const names = Object.keys(options.checks);
      const reports = await Promise.all(names.map((name) => runCheck(options.checks[name]!)));
      const dependencies = Object.fromEntries(names.map((name, i) => [name, reports[i]!]));
      const failed = names.filter((_, i) => reports[i]!.status === 'disconnected');
      const unready = failed.some((name) => options.checks[name]!.required);
      reply.code(unready ? 503 : 200);
      return {
        status: failed.length > 0 ? ('degraded' as const) : ('active' as const),
        ...base,
        date: new Date().toISOString(),
        dependencies,
      };
    },
  );
}
