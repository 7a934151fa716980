import { randomUUID } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import type { Socket } from 'node:net';
import type { $ZodIssue } from 'zod/v4/core';
import type { App } from './app.js';
import { AppError, PROBLEM_CONTENT_TYPE, RequestValidationError } from './errors.js';
import { negotiateLocale, translate } from './i18n.js';

/** What a request may be, before any handler sees it (each from the configuration, see config.ts). */
export interface HttpLimits {
  /** Largest request body, bytes. */
  bodyLimit: number;
  /** Longest request target (path and query), characters: 414 beyond. */
  maxUrlLength: number;
  /** Largest request line plus headers, bytes (Node's parser): 431 beyond, 414 when the URL alone is. */
  maxHeaderSize: number;
  /** Deepest nesting of a JSON body: 400 beyond. */
  jsonMaxDepth: number;
  /** Time a client has to send a whole request: 408 and closed beyond. */
  requestTimeoutMs: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  bodyLimit: 1_048_576,
  maxUrlLength: 8_192,
  maxHeaderSize: 16_384,
  jsonMaxDepth: 64,
  requestTimeoutMs: 30_000,
};

/** The limits a configuration names. */
export function httpLimitsOf(config: {
  BODY_LIMIT: number;
  MAX_URL_LENGTH: number;
  MAX_HEADER_SIZE: number;
  JSON_MAX_DEPTH: number;
  REQUEST_TIMEOUT_MS: number;
}): HttpLimits {
  return {
    bodyLimit: config.BODY_LIMIT,
    maxUrlLength: config.MAX_URL_LENGTH,
    maxHeaderSize: config.MAX_HEADER_SIZE,
    jsonMaxDepth: config.JSON_MAX_DEPTH,
    requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
  };
}

/**
 * U+0000 (which Postgres refuses in text, and C code reads as the end of a string) and
 * unpaired UTF-16 surrogates (which no UTF-8 encoder can write faithfully): never valid input.
 */
// eslint-disable-next-line no-control-regex -- matching U+0000 is the point
const FORBIDDEN_CHARACTER = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether a string holds a character no field of this platform accepts. */
export const hasForbiddenCharacter = (value: string): boolean => FORBIDDEN_CHARACTER.test(value);

/** At most this many offending fields are named in one answer. */
const MAX_REPORTED = 10;

/** Parsed input only: a proxied body is a stream, and none of its fields are input. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * The paths of the strings (values or keys) in `value` holding a forbidden character. Walks
 * without recursion, so no input can exhaust the stack (JSON depth is bounded before, too).
 */
export function forbiddenCharacterPaths(value: unknown): PropertyKey[][] {
  // Each entry points at its parent, so a path is built only for what is reported.
  interface Entry {
    value: unknown;
    key?: PropertyKey;
    parent?: Entry;
  }
  const pathOf = (entry: Entry | undefined, last?: PropertyKey): PropertyKey[] => {
    const path: PropertyKey[] = last === undefined ? [] : [last];
    for (let at = entry; at?.key !== undefined; at = at.parent) path.push(at.key);
    return path.reverse();
  };
  const found: PropertyKey[][] = [];
  const stack: Entry[] = [{ value }];
  while (stack.length > 0 && found.length < MAX_REPORTED) {
    const entry = stack.pop()!;
    const current = entry.value;
    if (typeof current === 'string') {
      if (hasForbiddenCharacter(current)) found.push(pathOf(entry));
    } else if (Array.isArray(current)) {
      for (let index = current.length - 1; index >= 0; index--) stack.push({ value: current[index], key: index, parent: entry });
    } else if (isPlainObject(current)) {
      for (const [key, child] of Object.entries(current)) {
        if (hasForbiddenCharacter(key)) found.push(pathOf(entry, key.replace(FORBIDDEN_CHARACTER, '\uFFFD')));
        else stack.push({ value: child, key, parent: entry });
      }
    }
  }
  return found;
}

/**
 * Whether `value` is clean, told without allocating, for what almost every request carries:
 * nothing, or a flat object of strings and other scalars (path parameters, a query, a small
 * body). False when it holds a forbidden character or nests (the full walk then decides).
 */
function isCleanFlat(value: unknown): boolean {
  if (typeof value === 'string') return !hasForbiddenCharacter(value);
  if (!isPlainObject(value)) return !Array.isArray(value);
  for (const key in value) {
    const child = value[key];
    if (hasForbiddenCharacter(key)) return false;
    if (typeof child === 'string' ? hasForbiddenCharacter(child) : typeof child === 'object' && child !== null) return false;
  }
  return true;
}

/** The 400 for the forbidden characters of one part of the request (`context`), if it holds any. */
function forbiddenCharacterIn(context: string, value: unknown): RequestValidationError | undefined {
  if (isCleanFlat(value)) return undefined;
  const paths = forbiddenCharacterPaths(value);
  return paths.length > 0 ? forbiddenCharacterError(context, paths) : undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/** Whether JSON text nests arrays and objects deeper than `max`; one pass over the bytes, no parsing. */
export function jsonNestsDeeperThan(body: Buffer, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < body.length; index++) {
    const byte = body[index];
    if (inString) {
      if (byte === BACKSLASH) index++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}

const issuesAt = (paths: PropertyKey[][]): $ZodIssue[] =>
  paths.map((path) => ({ code: 'custom', path, message: 'forbidden character', input: undefined, params: { key: 'error.forbiddenCharacter' } }) as $ZodIssue);

function forbiddenCharacterError(context: string, paths: PropertyKey[][]): RequestValidationError {
  const error = new RequestValidationError(issuesAt(paths));
  error.validationContext = context;
  return error;
}

/** `%00` in a request target decodes to U+0000, wherever in the path or query it is. */
const ENCODED_NUL = /%00/i;

/**
 * Registers what keeps hostile input from reaching a handler, on the root so every route
 * (and an edge's proxies) has it: URL length and encoded NULs at once, a JSON parser that
 * bounds nesting and insists on UTF-8, and a check of every decoded string before validation.
 */
export function registerInputGuards(app: App, limits: HttpLimits): void {
  // Callback style, not async, as every hook on every request: no promise and no microtask each.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.url.length > limits.maxUrlLength) {
      done(new AppError('PLATFORM_URI_TOO_LONG', 414, 'error.uriTooLong', { limit: limits.maxUrlLength }));
    } else if (ENCODED_NUL.test(request.url)) {
      done(forbiddenCharacterError('url', [[]]));
    } else {
      done();
    }
  });

  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    if (!isUtf8(bytes)) {
      done(new AppError('PLATFORM_INVALID_ENCODING', 400, 'error.invalidEncoding'), undefined);
    } else if (jsonNestsDeeperThan(bytes, limits.jsonMaxDepth)) {
      done(new AppError('PLATFORM_JSON_TOO_DEEP', 400, 'error.jsonTooDeep', { limit: limits.jsonMaxDepth }), undefined);
    } else {
      parseJson(request, bytes.toString('utf8'), done);
    }
  });

  app.addHook('preValidation', (request, _reply, done) => {
    done(forbiddenCharacterIn('body', request.body) ?? forbiddenCharacterIn('querystring', request.query) ?? forbiddenCharacterIn('params', request.params));
  });
}

/** Node's parser stopped inside the request line: the URL, not the headers, is too long. */
function overflowsInRequestLine(rawPacket: Buffer | undefined, maxUrlLength: number): boolean {
  if (!rawPacket) return false;
  const text = rawPacket.toString('latin1', 0, Math.min(rawPacket.length, maxUrlLength + 64));
  if (!/^[A-Z]+ /.test(text)) return !text.includes('\r\n');
  const lineEnd = text.indexOf('\r\n');
  return lineEnd === -1 || lineEnd > maxUrlLength;
}

/** The caller's Accept-Language, read from the raw bytes Node could not parse (best effort). */
function rawAcceptLanguage(rawPacket: Buffer | undefined): string | undefined {
  if (!rawPacket) return undefined;
  return /\r\naccept-language:[ \t]*([^\r\n]{0,512})/i.exec(rawPacket.toString('latin1', 0, 65_536))?.[1];
}

/** Node hands the unparsed bytes as a Buffer (Fastify's type describes their JSON form). */
type ClientError = Error & { code?: string; rawPacket?: unknown };

/**
 * Answers errors Node's HTTP parser raises before Fastify sees a request (oversized URL or
 * headers, malformed framing such as Transfer-Encoding with Content-Length, a request too
 * slow to arrive) with problem+json, then closes the connection: after a framing error
 * nothing that follows on it can be trusted.
 */
export function clientErrorResponder(limits: Pick<HttpLimits, 'maxUrlLength'>) {
  return (error: ClientError, socket: Socket): void => {
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const rawPacket = Buffer.isBuffer(error.rawPacket) ? error.rawPacket : undefined;
    const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' || error.code === 'HPE_HEADERS_TIMEOUT';
    const overflow = error.code === 'HPE_HEADER_OVERFLOW';
    const [status, code, key] = timedOut
      ? [408, 'PLATFORM_REQUEST_TIMEOUT', 'error.requestTimeout']
      : overflow && overflowsInRequestLine(rawPacket, limits.maxUrlLength)
        ? [414, 'PLATFORM_URI_TOO_LONG', 'error.uriTooLongUnparsed']
        : overflow
          ? [431, 'PLATFORM_HEADERS_TOO_LARGE', 'error.headersTooLarge']
          : [400, 'PLATFORM_BAD_REQUEST', 'error.badRequest'];
    const locale = negotiateLocale(rawAcceptLanguage(rawPacket));
    const title = translate(locale, `status.${status}`);
    const body = JSON.stringify({
      type: `urn:problem:${code.toLowerCase().replace(/_/g, '-')}`,
      title,
      status,
      detail: translate(locale, key),
      instance: '/',
      code,
      requestId: randomUUID(),
    });
    socket.end(
      `HTTP/1.1 ${status} ${translate('en', `status.${status}`)}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
        `Content-Language: ${locale}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    // A client that keeps sending after the answer must not hold the socket open.
    socket.destroySoon();
  };
}
