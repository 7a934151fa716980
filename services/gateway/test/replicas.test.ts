import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildGateway } from '@app/gateway';
import type { App } from '@app/platform';
import { freePort, silentLogger, startTokenIssuer, testConfig, type TokenIssuer } from '@app/testing';
import { answerDocument, declaredDocument } from './declared-routes.js';
import { gatewayConfig } from '../src/config.js';

/** A replica that answers every request with its name, the method and the body it received (its document aside). */
async function startReplica(name: string): Promise<{ url: string; seen: number; server: Server }> {
  const replica = { url: '', seen: 0, server: undefined as unknown as Server };
  replica.server = createServer((req, res) => {
    if (answerDocument(req, res, declaredDocument([]))) return;
    replica.seen++;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ replica: name, method: req.method, body: Buffer.concat(chunks).toString('utf8') }));
    });
  });
  await new Promise<void>((resolve) => replica.server.listen(0, '127.0.0.1', resolve));
  replica.url = `http://127.0.0.1:${(replica.server.address() as { port: number }).port}`;
  return replica;
}

describe('gateway in front of a service with several replicas', () => {
  let issuer: TokenIssuer;
  let gateway: App;
  let gatewayUrl: string;
  let replicas: Awaited<ReturnType<typeof startReplica>>[];
  let auth: Record<string, string>;

  beforeAll(async () => {
    issuer = await startTokenIssuer();
    auth = { authorization: `Bearer ${await issuer.mint('user-1', [])}` };
    replicas = [await startReplica('one'), await startReplica('two')];
    // Three replicas listed; nobody listens at the middle one (a replica that is down).
    const down = `http://127.0.0.1:${await freePort()}`;
    const config = testConfig({
      PLATFORM_SERVICES: 'crud',
      CRUD_URL: ` ${replicas[0]!.url}, ${down} ,${replicas[1]!.url}`,
      JWKS_URL: issuer.jwksUrl,
    }, [gatewayConfig]);
    gateway = await buildGateway(config, silentLogger());
    gatewayUrl = await gateway.listen({ host: '127.0.0.1', port: 0 });
  });

  afterAll(async () => {
    await gateway?.close();
    for (const replica of replicas ?? []) await new Promise((resolve) => replica.server.close(resolve));
    await issuer?.close();
  });

  it('spreads requests over the replicas that answer and skips the one that is down, bodies included', async () => {
    const answers = await Promise.all(
      Array.from({ length: 40 }, async (_, index) => {
        const body = JSON.stringify({ index, text: 'x'.repeat(index * 50) });
        const response = await fetch(`${gatewayUrl}/api/v1/things`, {
          method: index % 2 ? 'POST' : 'PUT',
          headers: { ...auth, 'content-type': 'application/json' },
          body,
        });
        return { status: response.status, sent: body, method: index % 2 ? 'POST' : 'PUT', got: (await response.json()) as { replica: string; method: string; body: string } };
      }),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.got.method).toBe(answer.method);
      expect(answer.got.body).toBe(answer.sent);
    }
    expect(replicas[0]!.seen).toBeGreaterThan(0);
    expect(replicas[1]!.seen).toBeGreaterThan(0);
    expect(replicas[0]!.seen + replicas[1]!.seen).toBe(40);
  });

  it('answers 503 with a problem when no replica answers', async () => {
    for (const replica of replicas) {
      replica.server.closeAllConnections();
      await new Promise((resolve) => replica.server.close(resolve));
    }
    const response = await fetch(`${gatewayUrl}/api/v1/things`, { headers: auth });
    expect(response.status).toBe(503);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(((await response.json()) as { code: string }).code).toBe('GATEWAY_UPSTREAM_UNAVAILABLE');
    replicas = [];
  });
});
