import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';

export interface RawReply {
  /** Everything the server sent, as latin1 text. */
  text: string;
  /** Status of the first final (non-1xx) response, 0 when none came. */
  status: number;
  /** Statuses of every response seen, 1xx included. */
  statuses: number[];
  /** Whether the server closed the connection before `closeWithinMs`. */
  closed: boolean;
  /** Milliseconds from the first byte sent to the close (or to the give-up). */
  elapsedMs: number;
}

/**
 * How long `rawRequest` waits for the server to close by default: a guard against a hang, far
 * longer than a closing server takes on a busy machine, and still far shorter than an idle
 * connection is kept (Fastify's keep-alive timeout, 72 s), so `closed` means the server
 * closed it for cause, not for idleness.
 */
const CLOSE_WITHIN_MS = 20_000;

export interface RawOptions {
  /** How long to wait for the server to close the connection; the test's "no hang" guard. */
  closeWithinMs?: number;
  /** Sent once the server answered `100 Continue` (or right away when it never does). */
  afterContinue?: string | Buffer;
  /** Stop waiting as soon as a final response's head arrived (for connections kept alive). */
  untilResponse?: boolean;
}

/**
 * Sends `request` byte for byte on a fresh TCP connection (no HTTP client to normalize it),
 * and collects what comes back until the server closes or `closeWithinMs` passes.
 */
export function rawRequest(url: string, request: string | Buffer, options: RawOptions = {}): Promise<RawReply> {
  const { hostname, port } = new URL(url);
  const closeWithinMs = options.closeWithinMs ?? CLOSE_WITHIN_MS;
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    let continued = false;
    let done = false;
    const statuses = () => [...Buffer.concat(chunks).toString('latin1').matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const seen = statuses();
      socket.destroy();
      resolve({ text, status: seen.find((status) => status >= 200) ?? 0, statuses: seen, closed, elapsedMs: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false), closeWithinMs);
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      const seen = statuses();
      if (options.afterContinue !== undefined && !continued && seen.includes(100)) {
        continued = true;
        socket.write(options.afterContinue);
      }
      if (options.untilResponse && seen.some((status) => status >= 200) && /\r\n\r\n/.test(Buffer.concat(chunks).toString('latin1'))) finish(false);
    });
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.write(request);
  });
}

/** The JSON body of a raw reply's (last) response, de-chunked when it came chunked. */
export function rawBody(reply: RawReply): Record<string, unknown> {
  const start = reply.text.lastIndexOf('\r\n\r\n', reply.text.endsWith('\r\n\r\n') ? reply.text.length - 5 : undefined);
  let body = reply.text.slice(start + 4);
  if (/^transfer-encoding: *chunked/im.test(reply.text.slice(0, start))) {
    let decoded = '';
    for (let at = 0; at < body.length; ) {
      const lineEnd = body.indexOf('\r\n', at);
      const size = parseInt(body.slice(at, lineEnd), 16);
      if (!size) break;
      decoded += body.slice(lineEnd + 2, lineEnd + 2 + size);
      at = lineEnd + 2 + size + 2;
    }
    body = decoded;
  }
  try {
    return JSON.parse(Buffer.from(body, 'latin1').toString('utf8')) as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** A header of a raw reply's last response, lower-cased name. */
export function rawHeader(reply: RawReply, name: string): string | undefined {
  const head = reply.text.slice(0, reply.text.lastIndexOf('\r\n\r\n'));
  const match = new RegExp(`\\r\\n${name}: *([^\\r\\n]*)`, 'ig').exec(head);
  return match?.[1];
}

/** An answer as it came over the wire: its body's bytes never decoded (fetch would undo a Content-Encoding). */
export interface BytesReply {
  status: number;
  headers: Record<string, string | undefined>;
  body: Buffer;
}

/** One request with node:http, which adds no Accept-Encoding of its own and decodes nothing. */
export function requestBytes(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<BytesReply> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const headers = Object.fromEntries(Object.entries(response.headers).map(([name, value]) => [name, value === undefined ? undefined : String(value)]));
        resolve({ status: response.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
    });
    sent.on('error', reject);
    sent.end(options.body);
  });
}
