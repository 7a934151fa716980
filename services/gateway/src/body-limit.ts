import { pipeline, Transform, type Readable } from 'node:stream';
import { OAUTH_BODY_TOO_LARGE } from '@app/contracts';
import { sendProblem, type App } from '@app/platform';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UpstreamRoute } from './edge-routes.js';

/**
 * The route a proxied request reaches, as its service declares it (sso's token, revoke and
 * introspection endpoints and its login and logout forms take 16 KiB); none for the
 * gateway's own routes.
 */
const upstreamRouteOf = (request: FastifyRequest): UpstreamRoute | undefined => request.routeOptions.config.upstreamRoute?.(request.method, request.url);

/** The largest body a request to `route` may carry at the edge: the route's own limit where it declares a smaller one. */
const limitFor = (route: UpstreamRoute | undefined, bodyLimit: number) => Math.min(bodyLimit, route?.bodyLimit ?? bodyLimit);

/**
 * 413 and the connection closed: what follows on it is the rest of a body nobody reads. A
 * route whose service answers its 413 as RFC 6749 JSON (the OAuth endpoints: never stored)
 * gets that answer here too.
 */
function refuse(request: FastifyRequest, reply: FastifyReply, route: UpstreamRoute | undefined, limit: number): FastifyReply {
  reply.header('connection', 'close');
  if (route?.oauthRefusal) {
    return reply.code(413).header('cache-control', 'no-store').header('pragma', 'no-cache').type('application/json; charset=utf-8').send(OAUTH_BODY_TOO_LARGE);
  }
  return sendProblem(request, reply, { status: 413, code: 'PLATFORM_BODY_TOO_LARGE', messageKey: 'error.bodyTooLarge', params: { limit } });
}

/**
 * Proxied bodies stream through unparsed, so the edge enforces the limit itself (an oversized
 * body never travels to a service that would refuse it halfway through): a declared
 * Content-Length over it is refused before anything is forwarded, and a chunked body is
 * counted as it streams and cut off (413 to the client, the upstream request aborted) the
 * moment it passes the limit.
 */
export function registerBodyLimit(app: App, bodyLimit: number): void {
  // Callback style, not async: every proxied request passes both hooks, most with no body.
  app.addHook('onRequest', (request, reply, done) => {
    const declared = request.headers['content-length'];
    if (declared !== undefined) {
      const route = upstreamRouteOf(request);
      const limit = limitFor(route, bodyLimit);
      // Answered here: the request goes no further (done is not called).
      if (Number(declared) > limit) return void refuse(request, reply, route, limit);
    }
    done();
  });
  app.addHook('preParsing', (request, reply, payload, done) => {
    // Only a chunked body needs counting: a declared length was checked above, and a request
    // with neither header has no body (RFC 9112 §6.3), as every GET the edge proxies.
    if (request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] === undefined) return done(null, payload);
    const route = upstreamRouteOf(request);
    const limit = limitFor(route, bodyLimit);
    let received = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        received += chunk.length;
        if (received <= limit) return callback(null, chunk);
        if (!reply.sent) refuse(request, reply, route, limit);
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
