import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildGateway } from '@app/gateway';
import { healthService } from '@app/health';
import { buildServiceApp, createLogger, type App } from '@app/platform';
import { freePort, openTestDependencies, startTokenIssuer, testConfig, type TokenIssuer } from '@app/testing';
import { gatewayConfig } from '../src/config.js';

interface Line {
  level: number;
  reqId?: string;
  service?: string;
  status?: number;
  msg: string;
}

/**
 * One line per request across the platform in split mode too: the service that answered a
 * proxied request logs it, the edge only what it answered itself.
 */
describe('gateway request log', () => {
  let deps: Awaited<ReturnType<typeof openTestDependencies>>;
  let issuer: TokenIssuer;
  let health: App;
  let gateway: App;
  let gatewayUrl: string;
  /** sso stands in as an upstream whose answers promise 100 bytes, send 10 and reset. */
  let broken: Server;
  const lines: string[] = [];
  const logger = createLogger({ LOG_LEVEL: 'info' }, { write: (line: string) => void lines.push(line) });
  /** Every line written for request `id`, by any process part: its request line, and any other. */
  const linesOf = (id: string) =>
    lines
      .map((line) => JSON.parse(line) as Line)
      .filter((line) => line.reqId === id)
      .map(({ service, status, msg }) => ({ service, status, msg }));
  /** Lines are written when the response has finished, a moment after the client has it. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

  beforeAll(async () => {
    deps = await openTestDependencies('embedded');
    issuer = await startTokenIssuer();
    health = await buildServiceApp(healthService, { ...deps, logger, config: { ...deps.config, PLATFORM_SERVICES: [] } });
    const healthUrl = await health.listen({ host: '127.0.0.1', port: 0 });
    broken = createServer((socket) =>
      socket.on('data', (head) => {
        const id = /^x-request-id: *(.*)$/im.exec(head.toString('latin1'))?.[1]?.trim() ?? '';
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\nx-request-id: ${id}\r\nset-cookie: half=1\r\n\r\n{"partial"`, () => socket.destroy());
      }),
    );
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
    const config = testConfig({
      PLATFORM_SERVICES: 'crud,sso',
      SSO_URL: `http://127.0.0.1:${(broken.address() as { port: number }).port}`,
      HEALTH_URL: healthUrl,
      // crud is down: the edge answers its requests itself.
      CRUD_URL: `http://127.0.0.1:${await freePort()}`,
      JWKS_URL: issuer.jwksUrl,
    }, [gatewayConfig]);
    gateway = await buildGateway(config, logger);
    gatewayUrl = await gateway.listen({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await gateway.close();
    await health.close();
    await new Promise((resolve) => broken.close(resolve));
    await deps.dispose();
    await issuer.close();
  });

  it('leaves a proxied request that the service answered to the service: one line, the service', async () => {
    // Probes are never logged; an unknown health path is, by the service that answers its 404.
    const token = await issuer.mint('service:test', ['system']);
    const response = await fetch(`${gatewayUrl}/api/v1/health/no-such-probe`, { headers: { 'x-request-id': 'proxied-1', authorization: `Bearer ${token}` } });
    expect(response.status).toBe(404);
    await settle();
    expect(linesOf('proxied-1')).toEqual([{ service: 'health', status: 404, msg: 'request' }]);
  });

  it('logs what the edge answers itself: a request without a token', async () => {
    const response = await fetch(`${gatewayUrl}/api/v1/products`, { headers: { 'x-request-id': 'edge-401' } });
    expect(response.status).toBe(401);
    await settle();
    expect(linesOf('edge-401')).toEqual([{ service: 'gateway', status: 401, msg: 'request' }]);
  });

  it('logs what the edge answers itself: a service that cannot be reached', async () => {
    const token = await issuer.mint('service:test', ['system']);
    const response = await fetch(`${gatewayUrl}/api/v1/products`, { headers: { 'x-request-id': 'edge-503', authorization: `Bearer ${token}` } });
    expect(response.status).toBe(503);
    await settle();
    // One line, with the cause: not also the proxy library's "response errored" nor a third.
    expect(linesOf('edge-503')).toEqual([{ service: 'gateway', status: 503, msg: 'request failed' }]);
    const line = lines.map((text) => JSON.parse(text) as Line & { err?: { code?: string; message?: string } }).find((entry) => entry.reqId === 'edge-503');
    expect(JSON.stringify(line?.err)).toContain('ECONNREFUSED');
  });

  it('logs an answer whose body broke off as a 502 of the edge, with its request id and none of the broken headers', async () => {
    const token = await issuer.mint('service:test', ['system']);
    const response = await fetch(`${gatewayUrl}/api/v1/sso/anything`, { headers: { 'x-request-id': 'edge-502', authorization: `Bearer ${token}` } });
    expect(response.status).toBe(502);
    expect(response.headers.get('x-request-id')).toBe('edge-502');
    expect(response.headers.get('set-cookie')).toBeNull();
    expect(response.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    await settle();
    expect(linesOf('edge-502')).toEqual([{ service: 'gateway', status: 502, msg: 'request failed' }]);
  });
});
