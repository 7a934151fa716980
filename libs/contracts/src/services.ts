import { z } from 'zod';

/** A service's readiness report, as the health service reads it from each service. */
export const serviceReadinessSchema = z.object({
  status: z.enum(['active', 'degraded']),
  service: z.string(),
  version: z.string(),
  date: z.string(),
  dependencies: z.record(
    z.string(),
    z.object({ status: z.enum(['connected', 'disconnected']), latency: z.number(), version: z.string().optional() }),
  ),
});

export type ServiceReadiness = z.infer<typeof serviceReadinessSchema>;
