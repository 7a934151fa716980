import { type App, problemSchema, RELEASE_VERSION } from '@app/platform';
import { livenessSchema, readinessSchema } from './schemas.js';
import { readinessReport, type ReadinessInputs } from './service.js';

export const HEALTH_PREFIX = '/api/v1/health';

/** The public health reports, routed by the gateway under /api/v1/health. */
export async function healthReportRoutes(app: App, inputs: ReadinessInputs): Promise<void> {
  app.get(
    `${HEALTH_PREFIX}/liveness`,
    {
      config: { auth: 'public' },
      schema: {
        tags: ['Health'],
        operationId: 'getLiveness',
        summary: 'Liveness: the platform answers',
        response: { 200: livenessSchema, 500: problemSchema },
      },
    },
    async () => ({ status: 'active' as const, version: RELEASE_VERSION, date: new Date().toISOString() }),
  );
  app.get(
    `${HEALTH_PREFIX}/readiness`,
    {
      config: { auth: 'public' },
      schema: {
        tags: ['Health'],
        operationId: 'getReadiness',
        summary: 'Readiness: database, cache and every service, with latencies',
        description: 'HTTP 503 with status "degraded" when any dependency or service fails.',
        response: { 200: readinessSchema, 503: readinessSchema, 500: problemSchema },
      },
    },
    async (_request, reply) => {
      const report = await readinessReport(inputs);
      reply.code(report.status === 'active' ? 200 : 503).header('cache-control', 'no-store');
      return { ...report, version: RELEASE_VERSION, date: new Date().toISOString() };
    },
  );
}
