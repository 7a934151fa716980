import { Transform, type Readable } from 'node:stream';
import { sendProblem, type App } from '@app/platform';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Routes whose service accepts less than BODY_LIMIT (sso's token and revoke endpoints and its
 * login and logout forms take a few short parameters: 16 KiB). The edge refuses more itself, so an oversized body never
 * travels to a service that would refuse it halfway through.
 */
const SMALLER_LIMITS: { path: RegExp; limit: number }[] = [{ path: /^\/api\/v1\/sso\/(token|revoke|login|logout)\/?$/, limit: 16_384 }];

/** The largest body `url` may carry at the edge. */
export function bodyLimitFor(url: string, bodyLimit: number): number {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return Math.min(bodyLimit, SMALLER_LIMITS.find((route) => route.path.test(path))?.limit ?? bodyLimit);
}

/** 413 and the connection closed: what follows on it is the rest of a body nobody reads. */
function refuse(request: FastifyRequest, reply: FastifyReply, limit: number): FastifyReply {
  reply.header('connection', 'close');
  return sendProblem(request, reply, { status: 413, code: 'PLATFORM_BODY_TOO_LARGE', messageKey: 'error.bodyTooLarge', params: { limit } });
}

/**
 * Proxied bodies stream through unparsed, so the edge enforces the limit itself: a declared
 * Content-Length over it is refused before anything is forwarded, and a chunked body is
 * counted as it streams and cut off (413 to the client, the upstream request aborted) the
 * moment it passes the limit.
 */
export function registerBodyLimit(app: App, bodyLimit: number): void {
  app.addHook('onRequest', async (request, reply) => {
    const limit = bodyLimitFor(request.url, bodyLimit);
    if (Number(request.headers['content-length'] ?? 0) > limit) return refuse(request, reply, limit);
  });
  app.addHook('preParsing', async (request, reply, payload) => {
    if (request.headers['content-length'] !== undefined) return payload;
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
    return (payload as Readable).pipe(counted);
  });
}
