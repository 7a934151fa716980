import { request as httpRequest } from 'node:http';
import fc from 'fast-check';
import {
  acceptLanguage,
  contentType,
  formBody,
  queryString,
  rawBody,
  stringSegment,
  uuidSegment,
  type Caller,
  type FuzzRequest,
  type Operation,
} from './openapi.js';

/** Tokens and record ids the fuzzer aims at: real ones, so requests get past authentication and lookups. */
export interface Targets {
  tokens: Record<'admin' | 'user', string>;
  ids: string[];
}

const FORGED = ['Bearer x.y.z', 'Bearer ', 'Basic Og==', 'Bearer eyJhbGciOiJub25lIn0.e30.', 'bearer', `Bearer ${'a'.repeat(9000)}`, 'Basic YWRtaW46YWRtaW4='];

/** A request for one operation: its path, query, headers and body, each drawn hostile or plausible. */
export function requestFor(operation: Operation, targets: Targets): fc.Arbitrary<FuzzRequest> {
  const segments = [...operation.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => name!);
  const pathArbitrary = fc
    .tuple(...segments.map((name) => (name === 'id' ? uuidSegment(targets.ids) : stringSegment())))
    .map((values) => segments.reduce((path, name, index) => path.replace(`{${name}}`, values[index]!), operation.path));
  const body = operation.body;
  const bodyArbitrary: fc.Arbitrary<{ type?: string; bytes?: Buffer }> = body
    ? fc
        .tuple(contentType(body.contentTypes), formBody(body.schema), rawBody(body.schema), fc.nat(12))
        .map(([type, form, raw, pick]) => ({ type, bytes: pick === 0 ? undefined : type?.includes('form') ? form : raw }))
    : fc.oneof({ weight: 8, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: fc.constant({ type: 'application/json', bytes: Buffer.from('{"a":1}') }) });
  const callerArbitrary = fc.constantFrom<Caller>('admin', 'admin', 'user', 'user', 'anonymous', 'forged');
  return fc
    .record({
      path: pathArbitrary,
      query: queryString(operation.parameters),
      body: bodyArbitrary,
      caller: callerArbitrary,
      forged: fc.constantFrom(...FORGED),
      language: acceptLanguage,
      prefer: fc.constantFrom(undefined, undefined, 'count=exact', 'count=planned', 'return=minimal', '%00'),
    })
    .map(({ path, query, body: sent, caller, forged, language, prefer }) => {
      const headers: Record<string, string> = {};
      if (caller === 'admin' || caller === 'user') headers.authorization = `Bearer ${targets.tokens[caller]}`;
      if (caller === 'forged') headers.authorization = forged;
      if (sent.type !== undefined) headers['content-type'] = sent.type;
      if (language !== undefined) headers['accept-language'] = language;
      if (prefer !== undefined) headers.prefer = prefer;
      return { operation: `${operation.method} ${operation.path}`, caller, method: operation.method, path: `${path}${query}`, headers, body: sent.bytes };
    });
}

/** A request for any operation of the document. */
export function anyRequest(operations: Operation[], targets: Targets): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(...operations.map((operation) => requestFor(operation, targets)));
}

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Sends a request as given (raw path, headers and bytes; no client normalization), on its own
 * connection. Rejects when no answer comes within `timeoutMs`.
 */
export function send(base: URL, fuzz: FuzzRequest, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...fuzz.headers };
    if (fuzz.body) headers['content-length'] = String(fuzz.body.length);
    const outgoing = httpRequest(
      { host: base.hostname, port: base.port, method: fuzz.method, path: fuzz.path, headers, agent: false, timeout: timeoutMs },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString() }));
        response.on('error', reject);
      },
    );
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    outgoing.on('error', reject);
    outgoing.end(fuzz.body);
  });
}

const TOKEN_ENDPOINTS = ['/api/v1/sso/token', '/api/v1/sso/revoke', '/api/v1/sso/introspect'];
/** Pages a browser lands on (Google and GitHub sign-in): their own errors are HTML pages, as documented. */
const BROWSER_PAGES = ['/api/v1/sso/federation/'];

/** What is wrong with an answer, or undefined when it keeps the property. */
export function violation(fuzz: FuzzRequest, answer: Answer): string | undefined {
  if (answer.status >= 500) return `${answer.status}`;
  if (answer.status < 400) return undefined;
  const type = String(answer.headers['content-type'] ?? '');
  let parsed: Record<string, unknown> | undefined;
  try {
    parsed = JSON.parse(answer.body) as Record<string, unknown>;
  } catch {
    parsed = undefined;
  }
  const oauth = TOKEN_ENDPOINTS.some((path) => fuzz.path.startsWith(path));
  if (oauth && type.startsWith('application/json') && typeof parsed?.error === 'string') return undefined;
  const page = BROWSER_PAGES.some((path) => fuzz.operation.split(' ')[1]?.startsWith(path));
  // The page's own refusals; what the edge refuses before any route (a NUL, an over-long URL, a forged token) is problem+json there too.
  if (page && type.startsWith('text/html')) return answer.body.includes('<html') ? undefined : `${answer.status} empty HTML page`;
  if (!type.startsWith('application/problem+json')) return `${answer.status} not problem+json (${type || 'no content type'})`;
  if (!parsed || parsed.status !== answer.status || typeof parsed.title !== 'string') return `${answer.status} malformed problem body`;
  return undefined;
}

/** A reproduction of a request: method, path, headers and body (long parts shortened, lengths kept). */
export function reproduction(fuzz: FuzzRequest): string {
  const shorten = (text: string) => (text.length > 300 ? `${text.slice(0, 200)}… (${text.length} chars)` : text);
  const headers = Object.entries(fuzz.headers)
    .map(([name, value]) => `${name}: ${name === 'authorization' && value.startsWith('Bearer ey') ? `Bearer <${fuzz.caller} token>` : shorten(value)}`)
    .join('\n    ');
  const body = fuzz.body === undefined ? '' : `\n  body (${fuzz.body.length} bytes): ${shorten(JSON.stringify(fuzz.body.toString('latin1')))}`;
  return `${fuzz.method} ${shorten(fuzz.path)}\n    ${headers}${body}`;
}
