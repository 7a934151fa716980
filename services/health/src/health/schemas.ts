import { dependencyReportSchema } from '@app/platform';
import { z } from 'zod';

export const livenessSchema = z
  .object({
    status: z.literal('active'),
    version: z.string().describe('Release label of the platform'),
    date: z.string().describe('Server time, ISO 8601'),
  })
  .meta({ id: 'Liveness' });

export const serviceReportSchema = z
  .object({
    status: z.enum(['active', 'degraded', 'disconnected']),
    latency: z.number().describe('Milliseconds; -1 when the service did not answer'),
  })
  .meta({ id: 'ServiceReport' });

export const readinessSchema = z
  .object({
    status: z.enum(['active', 'degraded']),
    version: z.string(),
    date: z.string(),
    uptime: z.number().describe('Seconds since the health service started'),
    memory: z.object({ rss: z.number(), heapTotal: z.number(), heapUsed: z.number(), external: z.number() }).describe('Bytes'),
    disk: z.object({ free: z.number(), total: z.number() }).describe('Bytes, of the volume holding the data directory'),
    dependencies: z.object({ database: dependencyReportSchema, cache: dependencyReportSchema }),
    services: z.record(z.string(), serviceReportSchema),
  })
  .meta({ id: 'Readiness' });

export type ServiceReport = z.infer<typeof serviceReportSchema>;
