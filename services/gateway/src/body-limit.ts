import { pipeline, Transform, type Readable } from 'node:stream';
import { OAUTH_BODY_TOO_LARGE, OAUTH_FORM_BODY_LIMIT, OAUTH_FORM_PATHS } from '@app/contracts';
import { sendProblem, urlPath, type App } from '@app/platform';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Routes whose service accepts less than BODY_LIMIT (sso's token and revoke endpoints and its
 * login and logout forms take a few short parameters: 16 KiB). The edge refuses more itself,
 * so an oversized body never travels to a service that would refuse it halfway through.
 */
const SMALLER_LIMITS: { path: RegExp; limit: number }[] = [
  { path: OAUTH_FORM_PATHS, limit: OAUTH_FORM_BODY_LIMIT },
  { path: /^\/api\/v1\/sso\/(login|logout)\/?$/, limit: 16_384 },
];

/** The largest body `url` may carry at the edge. */
export function bodyLimitFor(url: string, bodyLimit: number): number {
  const path = urlPath(url);
  return Math.min(bodyLimit, SMALLER_LIMITS.find((route) => route.path.test(path))?.limit ?? bodyLimit);
}

/**
 * 413 and the connection closed: what follows on it is the rest of a body nobody reads. The
 * OAuth endpoints' 413 is theirs (RFC 6749 JSON, never stored), as sso answers it itself.
 */
function refuse(request: FastifyRequest, reply: FastifyReply, limit: number): FastifyReply {
  reply.header('connection', 'close');
  if (OAUTH_FORM_PATHS.test(urlPath(request.url))) {
    return reply.code(413).header('cache-control', 'no-store').header('pragma', 'no-cache').type('application/json; charset=utf-8').send(OAUTH_BODY_TOO_LARGE);
  }
  return sendProblem(request, reply, { status: 413, code: 'PLATFORM_BODY_TOO_LARGE', messageKey: 'error.bodyTooLarge', params: { limit } });
}

/**
 * Proxied bodies stream through unparsed, so the edge enforces the limit itself: a declared
 * Content-Length over it is refused before anything is forwarded, and a chunked body is
 * counted as it streams and cut off (413 to the client, the upstream request aborted) the
 * moment it passes the limit.
 */
export function registerBodyLimit(app: App, bodyLimit: number): void {
  // Callback style, not async: every proxied request passes both hooks, most with no body.
  app.addHook('onRequest', (request, reply, done) => {
    const declared = request.headers['content-length'];
    if (declared !== undefined) {
      const limit = bodyLimitFor(request.url, bodyLimit);
      // Answered here: the request goes no further (done is not called).
      if (Number(declared) > limit) return void refuse(request, reply, limit);
    }
    done();
  });
  app.addHook('preParsing', (request, reply, payload, done) => {
    // Only a chunked body needs counting: a declared length was checked above, and a request
    // with neither header has no body (RFC 9112 §6.3), as every GET the edge proxies.
    if (request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] === undefined) return done(null, payload);
    const limit = bodyLimitFor(request.url, bodyLimit);
    let received = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        if (received <= limit) return callback(null, chunk);
        if (!reply.sent) refuse(request, reply, limit);
        this.destroy();
      },
    });
    // pipeline, not pipe: when the client's body breaks off (a malformed chunk, a reset), the
    // error reaches the stream the proxy forwards, and the upstream request is aborted. With
    // pipe it waited for a body that never came and held the service's connection (and its
    // close) until the service's request timeout.
    done(null, pipeline(payload as Readable, counted, () => undefined));
  });
}
