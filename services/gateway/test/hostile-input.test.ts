import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { buildGateway } from '@app/gateway';
import type { App } from '@app/platform';
import { eventually, rawBody, rawHeader, rawRequest, SETTLE_BUDGET_MS, silentLogger, testConfig } from '@app/testing';
import { gatewayConfig } from '../src/config.js';
import { answerDocument, declaredDocument, SSO_TOKEN_ROUTE } from './declared-routes.js';

/** sso's login form as it declares it: open, 16 KiB, refused with a problem. */
const LOGIN_ROUTE = { method: 'POST', path: '/api/v1/sso/login', auth: 'public', bodyLimit: 16_384 } as const;
/** An open route that declares no limit of its own: BODY_LIMIT applies. */
const OPEN_ROUTE = { method: 'POST', path: '/api/v1/sso/open', auth: 'public' } as const;
const JWKS_ROUTES = ['GET', 'HEAD'].map((method) => ({ method, path: '/api/v1/sso/jwks', auth: 'public' }) as const);
/** The fake sso's own document: the routes below, as sso declares them. */
const SSO_DOCUMENT = declaredDocument([SSO_TOKEN_ROUTE, LOGIN_ROUTE, OPEN_ROUTE, ...JWKS_ROUTES], [SSO_TOKEN_ROUTE]);

/**
 * The gateway against requests an HTTP client would never send: raw sockets in front, and
 * behind it an upstream that records everything it is sent, so a test can tell what the
 * edge forwarded (nothing, for an ambiguous request).
 */
describe('gateway: hostile input', () => {
  let upstream: Server;
  let gateway: App;
  let url: string;
  let host: string;
  const seen: { method: string; url: string; headers: IncomingHttpHeaders; body: string; complete: boolean; closed: boolean }[] = [];

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      if (answerDocument(req, res, SSO_DOCUMENT)) return;
      const record = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: '', complete: false, closed: false };
      seen.push(record);
      req.on('close', () => (record.closed = true));
      req.setEncoding('latin1');
      req.on('data', (chunk: string) => (record.body += chunk));
      req.on('end', () => {
        record.complete = true;
        // What a keep-alive upstream says about its own connection, and a header it lists as hop-by-hop.
        res.writeHead(200, { 'content-type': 'application/json', connection: 'keep-alive, x-upstream-hop', 'keep-alive': 'timeout=999', 'x-upstream-hop': '1' });
        res.end(JSON.stringify({ received: record.body.length }));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    // The upstream timeout outlasts any wait here: only an abort ends an upstream request early.
    const upstreamTimeout = String(2 * SETTLE_BUDGET_MS);
    gateway = await buildGateway(
      testConfig({ PLATFORM_SERVICES: 'sso', SSO_URL: upstreamUrl, HEALTH_URL: upstreamUrl, BODY_LIMIT: '65536', UPSTREAM_TIMEOUT_MS: upstreamTimeout }, [gatewayConfig]),
      silentLogger(),
    );
    url = await gateway.listen({ host: '127.0.0.1', port: 0 });
    host = new URL(url).host;
  });
  afterAll(async () => {
    await gateway.close();
    upstream.closeAllConnections();
    await new Promise((resolve) => upstream.close(resolve));
  });
  beforeEach(() => {
    seen.length = 0;
  });

  const tokenRequest = (headers: string, body = '') =>
    `POST /api/v1/sso/token HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\n${headers}\r\n${body}`;

  it('Expect: 100-continue: 100 from the edge, then the upstream answers; it never sees Expect', async () => {
    const body = 'grant_type=client_credentials';
    const reply = await rawRequest(url, tokenRequest(`Content-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n`), { afterContinue: body });
    expect(reply.statuses).toEqual([100, 200]);
    expect(rawBody(reply)).toEqual({ received: body.length });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers.expect).toBeUndefined();
    expect(seen[0]!.body).toBe(body);
  });

  it("Connection: close wins over the upstream's keep-alive: answered, then closed at once", async () => {
    const reply = await rawRequest(url, tokenRequest('Content-Length: 0\r\nConnection: close\r\n'));
    expect(reply.status).toBe(200);
    expect(rawHeader(reply, 'connection')).toBe('close');
    expect(reply.closed).toBe(true);
  });

  it('HTTP/1.0 is answered and closed', async () => {
    const reply = await rawRequest(url, `POST /api/v1/sso/token HTTP/1.0\r\nHost: ${host}\r\nContent-Length: 0\r\n\r\n`);
    expect(reply.status).toBe(200);
    expect(reply.closed).toBe(true);
  });

  it("the upstream's hop-by-hop headers stay on its own connection", async () => {
    const reply = await rawRequest(url, tokenRequest('Content-Length: 0\r\n'), { untilResponse: true });
    expect(reply.status).toBe(200);
    expect(rawHeader(reply, 'keep-alive')).not.toBe('timeout=999');
    expect(rawHeader(reply, 'x-upstream-hop')).toBeUndefined();
  });

  it('a client’s hop-by-hop headers are not forwarded', async () => {
    await rawRequest(url, tokenRequest('Content-Length: 0\r\nConnection: close, x-client-hop\r\nX-Client-Hop: 1\r\nKeep-Alive: timeout=999\r\nTE: trailers\r\n'));
    expect(seen).toHaveLength(1);
    expect(seen[0]!.headers).not.toHaveProperty('x-client-hop');
    expect(seen[0]!.headers).not.toHaveProperty('te');
    expect(seen[0]!.headers['keep-alive']).toBeUndefined();
  });

  it('a body over the 16 KiB of the token endpoint: 413 at once and closed, nothing forwarded', async () => {
    const body = `password=${'x'.repeat(200_000)}`;
    const reply = await rawRequest(url, tokenRequest(`Content-Length: ${body.length}\r\n`, body));
    expect(reply.status).toBe(413);
    expect(reply.closed).toBe(true);
    expect(rawBody(reply)).toEqual({ error: 'invalid_request', error_description: 'The request body is too large.' });
    expect(seen).toHaveLength(0);
  });

  it('a body just over the 16 KiB its route declares, under BODY_LIMIT: 413 as the route answers it, closed, nothing forwarded', async () => {
    const body = `password=${'x'.repeat(20_000)}`;
    const token = await rawRequest(url, tokenRequest(`Content-Length: ${body.length}\r\n`, body));
    expect([token.status, token.closed]).toEqual([413, true]);
    expect(rawHeader(token, 'cache-control')).toBe('no-store');
    expect(rawBody(token)).toEqual({ error: 'invalid_request', error_description: 'The request body is too large.' });
    const login = await rawRequest(
      url,
      `POST /api/v1/sso/login HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect([login.status, login.closed]).toEqual([413, true]);
    expect(rawHeader(login, 'content-type')).toBe('application/problem+json; charset=utf-8');
    expect(rawBody(login)).toMatchObject({ status: 413, code: 'PLATFORM_BODY_TOO_LARGE' });
    expect(seen).toHaveLength(0);
  });

  it('the same body to an open route that declares no limit of its own streams through whole', async () => {
    const body = `field=${'x'.repeat(20_000)}`;
    const reply = await rawRequest(
      url,
      `POST /api/v1/sso/open HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(reply.status).toBe(200);
    expect(rawBody(reply)).toEqual({ received: body.length });
  });

  it('a chunked body that grows past the limit: 413 and closed; the upstream never gets a whole request', async () => {
    const chunk = 'x'.repeat(8_192);
    const chunks = Array.from({ length: 40 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('');
    const reply = await rawRequest(url, tokenRequest('Transfer-Encoding: chunked\r\n', `${chunks}0\r\n\r\n`));
    expect(reply.status).toBe(413);
    expect(reply.closed).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(seen.filter((request) => request.complete)).toEqual([]);
  });

  it('a chunked body under the limit streams through whole', async () => {
    const reply = await rawRequest(url, tokenRequest('Transfer-Encoding: chunked\r\nConnection: close\r\n', '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n'));
    expect(reply.status).toBe(200);
    expect(seen[0]?.body).toBe('hello world');
  });

  const ambiguous: [string, string][] = [
    ['Transfer-Encoding with Content-Length', 'Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /api/v1/sso/jwks HTTP/1.1\r\n\r\n'],
    ['two Content-Lengths', 'Content-Length: 0\r\nContent-Length: 5\r\n\r\nhello'],
    ['a Content-Length list', 'Content-Length: 5, 0\r\n\r\nhello'],
    ['Transfer-Encoding not ending in chunked', 'Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n'],
    ['an obfuscated Transfer-Encoding', 'Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n'],
    ['a CR alone in a header value', 'X-A: b\rc\r\nContent-Length: 0\r\n\r\n'],
    ['a LF alone ending a header', 'X-A: b\nContent-Length: 0\r\n\r\n'],
    ['a NUL in a header value', 'X-A: b\u0000c\r\nContent-Length: 0\r\n\r\n'],
    ['a folded header line', 'X-A: b\r\n c\r\nContent-Length: 0\r\n\r\n'],
    ['whitespace before the colon', 'Transfer-Encoding : chunked\r\nContent-Length: 0\r\n\r\n'],
    ['a negative Content-Length', 'Content-Length: -1\r\n\r\n'],
    ['a chunk size that overflows', 'Transfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nx\r\n0\r\n\r\n'],
  ];
  it.each(ambiguous)('%s: 4xx, closed, and nothing reaches the upstream', async (_name, rest) => {
    const reply = await rawRequest(url, `POST /api/v1/sso/token HTTP/1.1\r\nHost: ${host}\r\n${rest}`);
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.status).toBeLessThan(500);
    expect(reply.closed).toBe(true);
    expect(seen).toEqual([]);
  });

  it('an encoded NUL in the path or query is refused at the edge', async () => {
    for (const target of ['/api/v1/sso/tok%00en', '/api/v1/sso/jwks?x=%00']) {
      const reply = await rawRequest(url, `GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect([target, reply.status]).toEqual([target, 400]);
    }
    expect(seen).toEqual([]);
  });

  it('a URL over the limit: 414 at the edge, nothing forwarded', async () => {
    const reply = await rawRequest(url, `GET /api/v1/sso/jwks?x=${'a'.repeat(9_000)} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    expect(reply.status).toBe(414);
    expect(seen).toEqual([]);
  });

  it('a chunked body that breaks off mid-way: the upstream request is aborted at once, not left waiting for the rest', async () => {
    const client = connect({ host: '127.0.0.1', port: Number(new URL(url).port) });
    let answer = '';
    client.setEncoding('latin1').on('data', (chunk: string) => (answer += chunk));
    const closed = new Promise<void>((resolve) => client.on('close', () => resolve()));
    client.write(`POST /api/v1/sso/token HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n`);
    // The upstream request has begun, its body streaming: now a chunk size that is no number.
    await eventually(async () => seen.length > 0, SETTLE_BUDGET_MS, 10);
    expect(seen).toHaveLength(1);
    client.write('zz\r\n{}\r\n0\r\n\r\n');
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 4\d\d /);
    await eventually(async () => seen[0]!.closed, SETTLE_BUDGET_MS, 10);
    expect(seen[0]).toMatchObject({ complete: false, closed: true });
  });
});
