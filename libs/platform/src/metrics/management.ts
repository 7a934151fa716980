import { createServer } from 'node:http';
import type { Logger } from '../logger.js';
import { METRICS_PATH, metricsRegistry } from './metrics.js';

/**
 * The process's management listener: Prometheus' scrape, on MANAGEMENT_PORT, apart from the
 * public port. Metrics name routes and count failed sign-ins; on their own port, no edge
 * route or Ingress reaches them, and a NetworkPolicy can admit the scraper to this port alone.
 */
export interface ManagementServer {
  /** Base URL it listens on, e.g. http://127.0.0.1:9464. */
  url: string;
  close(): Promise<void>;
}

/**
 * Opens the management listener: GET (and HEAD) /metrics in the Prometheus text format,
 * 404 for anything else. Plain node:http: one route, no token (the port is private), none of
 * the public app's hooks, so a scrape never shows up in the request metrics it reads.
 */
export async function startManagementServer(options: { host: string; port: number; logger: Logger }): Promise<ManagementServer> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0]?.replace(/\/$/, '');
    if (path !== METRICS_PATH || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    metricsRegistry.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': metricsRegistry.contentType, 'cache-control': 'no-store' });
        response.end(request.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        options.logger.error({ err: error }, 'collecting metrics failed');
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('collecting metrics failed\n');
      },
    );
  });
  // A scrape is one short request; keep-alive connections from Prometheus must not hold a shutdown open.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  options.logger.info({ port }, `metrics on http://${host}:${port}${METRICS_PATH}`);
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
