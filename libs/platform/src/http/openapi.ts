import { STATUS_CODES } from 'node:http';
import type { RouteOptions } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { RouteAuth } from '../auth/route-auth.js';
import type { App } from './app.js';
import { PROBLEM_MEDIA_TYPE } from './errors.js';

/*
 * What every service's OpenAPI document says the same way, so the edge's merged document
 * reads as one API: an operationId on every operation, errors as `application/problem+json`
 * with the one `Problem` schema, `security` from the route's declared `auth`, and the response
 * headers the platform sends, each a `$ref` to one entry of `components.headers`.
 */

/** The response headers the platform documents, as `components.headers`. */
export const RESPONSE_HEADERS = {
  Link: {
    description:
      'RFC 8288 links to the neighbouring pages of a list, each keeping the request\'s other parameters. ' +
      'A list asked for without offset links `rel="next"` by `cursor` when another page follows, and a page from a cursor ' +
      'links `rel="first"`. A list asked for by `offset` links `rel="next"` and, unless it starts at offset 0, `rel="prev"` by offset.',
    schema: { type: 'string' },
    example: '</api/v1/products?sort=price&cursor=eyJmIjoi...>; rel="next"',
  },
  'Content-Range': {
    description:
      'Only with `Prefer: count=exact` or `count=estimated`: `<first>-<last>/<total>`, `*/<total>` for an empty page or a page ' +
      'from a cursor (its position is not counted). With `count=estimated` the total is the planner\'s estimate when it is large ' +
      '(as PostgREST answers it, though RFC 9110 means the length to be exact).',
    schema: { type: 'string', pattern: '^(\\d+-\\d+|\\*)/\\d+$' },
    example: '0-19/42',
  },
  'Preference-Applied': {
    description: 'Only with `Prefer: count=exact` or `count=estimated`: which total Content-Range holds (RFC 7240).',
    schema: { type: 'string', enum: ['count=exact', 'count=estimated'] },
    example: 'count=exact',
  },
  'Retry-After': {
    description: 'Seconds to wait before trying again.',
    schema: { type: 'integer', minimum: 1 },
    example: 5,
  },
  RateLimit: {
    description:
      'IETF RateLimit header: the quota left in the named policy (`r`) and the seconds until it resets (`t`). ' +
      'The earlier `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` carry the same numbers.',
    schema: { type: 'string' },
    example: '"signup";r=99;t=600',
  },
  'RateLimit-Policy': {
    description: 'IETF RateLimit-Policy header: the named policy\'s quota (`q`) per window of `w` seconds.',
    schema: { type: 'string' },
    example: '"signup";q=100;w=600',
  },
  ETag: {
    description: 'The version of the representation (RFC 9110 §8.8.3), for `If-None-Match` and `If-Match`.',
    schema: { type: 'string' },
    example: '"5d41402abc4b2a76"',
  },
  Location: {
    description: 'The URL of the created resource.',
    schema: { type: 'string', format: 'uri-reference' },
    example: '/api/v1/products/3fa85f64-5717-4562-b3fc-2c963f66afa6',
  },
} as const;

export type ResponseHeaderName = keyof typeof RESPONSE_HEADERS;

declare module 'fastify' {
  interface FastifySchema {
    /**
     * Response headers this route sends, by status, besides those the platform documents by
     * itself (`Link` and `Content-Range` on lists, `Retry-After` on 429 and 503 problems).
     * Each name is an entry of RESPONSE_HEADERS, documented once in `components.headers`.
     */
    responseHeaders?: Readonly<Partial<Record<number, readonly ResponseHeaderName[]>>>;
  }
}

const PROBLEM_REF = '#/components/schemas/Problem';
/** Where a route's `responseHeaders` travel from its schema to its operation (removed from the finished document). */
const DECLARED_HEADERS = 'x-response-headers';
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

type Json = Record<string, unknown>;
interface Operation extends Json {
  operationId?: string;
  parameters?: { in: string; name: string }[];
  responses?: Record<string, Response>;
  [DECLARED_HEADERS]?: Partial<Record<number, readonly ResponseHeaderName[]>>;
}
interface Response extends Json {
  description?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: Json }>;
}
export interface OpenApiDocument extends Json {
  paths?: Record<string, Record<string, Operation>>;
  components?: Record<string, Record<string, unknown> | undefined>;
}

/** The OpenAPI `security` of a route's declared `auth` (route-auth.ts): none, optional or a bearer token. */
function securityOf(auth: RouteAuth | undefined): Record<string, string[]>[] {
  if (auth === 'public') return [];
  // An empty requirement is "no credentials": either that, or a bearer token.
  if (auth === 'optional') return [{}, { bearerAuth: [] }];
  return [{ bearerAuth: [] }];
}

type TransformInput = Parameters<typeof jsonSchemaTransform>[0] & { route: { config?: { auth?: RouteAuth } } };

/**
 * @fastify/swagger's per-route transform: the zod schemas as JSON Schema (the type provider's
 * own transform), `security` from the route's `auth` unless the route says otherwise, and its
 * declared response headers carried to the operation for `finishDocument`.
 */
export function documentRoute(input: TransformInput): ReturnType<typeof jsonSchemaTransform> {
  const transformed = jsonSchemaTransform(input);
  if (!transformed.schema) return transformed;
  const { responseHeaders, ...schema } = transformed.schema;
  if (schema.hide) return transformed;
  return {
    ...transformed,
    schema: {
      ...schema,
      security: schema.security ?? securityOf(input.route.config?.auth),
      ...(responseHeaders ? { [DECLARED_HEADERS]: responseHeaders } : {}),
    },
  };
}

/** `listProducts` from words: the first lower-cased, the others capitalized, separators dropped. */
export function camelCase(...words: string[]): string {
  const parts = words.flatMap((word) => word.split(/[^A-Za-z0-9]+/)).filter(Boolean);
  return parts.map((part, i) => (i === 0 ? part.charAt(0).toLowerCase() : part.charAt(0).toUpperCase()) + part.slice(1)).join('');
}

/**
 * The operationId of a route that declares none: its method and path, without the API's
 * version prefix, each path parameter as `By<Name>` (`GET /api/v1/orders/{id}` is `getOrdersById`).
 * Routes should declare a readable one; this keeps every operation identified regardless.
 */
export function derivedOperationId(method: string, path: string): string {
  const segments = path
    .replace(/^\/api\/v\d+/, '')
    .split('/')
    .filter(Boolean)
    .map((segment) => (segment.startsWith('{') ? `by-${segment.slice(1, -1)}` : segment));
  return camelCase(method, ...segments);
}

/** Whether an operation is a list of the platform's conventions (list.ts): paged by limit and offset. */
const isList = (operation: Operation) =>
  ['limit', 'offset'].every((name) => operation.parameters?.some((parameter) => parameter.in === 'query' && parameter.name === name));

/** The headers an answer carries by the platform's own rules: paging on lists, when to retry on a throttled or unavailable problem. */
function conventionalHeaders(operation: Operation, status: number, problem: boolean): ResponseHeaderName[] {
  const names: ResponseHeaderName[] = [];
  if (status === 200 && isList(operation)) names.push('Link', 'Content-Range', 'Preference-Applied');
  // Every 429 problem (the throttles) and 503 problem (an unavailable dependency, errors.ts) says when to come back.
  if (problem && (status === 429 || status === 503)) names.push('Retry-After');
  return names;
}

function finishResponse(operation: Operation, status: string, response: Response): Response {
  const code = Number(status);
  let { content, description } = response;
  // An error answered with the Problem schema is a problem document (RFC 9457), and says so.
  const json = content?.['application/json'];
  const problem = code >= 400 && json?.schema?.$ref === PROBLEM_REF && Object.keys(content!).length === 1;
  if (problem) content = { [PROBLEM_MEDIA_TYPE]: json };
  const declared = operation[DECLARED_HEADERS]?.[code] ?? [];
  // A header a schema documents inline (zod `.meta({ headers })`) under a shared name is the shared one.
  const inline = Object.keys(response.headers ?? {}).filter((name): name is ResponseHeaderName => Object.hasOwn(RESPONSE_HEADERS, name));
  const names = [...new Set([...conventionalHeaders(operation, code, problem), ...declared, ...inline])];
  if (!description || description === 'Default Response') description = STATUS_CODES[code] ?? status;
  return {
    ...response,
    description,
    ...(names.length > 0 ? { headers: { ...response.headers, ...Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }])) } } : {}),
    ...(content ? { content } : {}),
  };
}

/** Every `$ref` target under `value`, e.g. `#/components/schemas/Problem`. */
function refsIn(value: unknown, found: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const item of value) refsIn(item, found);
  else if (value && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' && typeof child === 'string') found.add(child);
      else refsIn(child, found);
    }
  }
  return found;
}

/**
 * Keeps only the components something refers to, directly or through another component: the
 * type provider emits an input and an output variant of every registered schema, and each
 * service's document offers every shared header, whether used or not.
 */
function withoutUnusedComponents(document: OpenApiDocument): OpenApiDocument {
  const components = document.components ?? {};
  const used = refsIn({ ...document, components: undefined }, new Set());
  const pending = [...used];
  while (pending.length > 0) {
    const [, , kind, name] = pending.pop()!.split('/');
    const target = kind && name ? components[kind]?.[name] : undefined;
    for (const ref of refsIn(target, new Set())) {
      if (!used.has(ref)) {
        used.add(ref);
        pending.push(ref);
      }
    }
  }
  const kept = Object.entries(components).map(([kind, entries]) => {
    if (kind === 'securitySchemes' || !entries) return [kind, entries];
    return [kind, Object.fromEntries(Object.entries(entries).filter(([name]) => used.has(`#/components/${kind}/${name}`)))];
  });
  return { ...document, components: Object.fromEntries(kept.filter(([, entries]) => entries && Object.keys(entries).length > 0)) };
}

/**
 * The type provider names a schema's request variant `<id>Input`; where only that variant is
 * left, it takes the plain name (`ProductCreateInput` is `ProductCreate`), every `$ref` with it.
 */
function withPlainSchemaNames(document: OpenApiDocument): OpenApiDocument {
  const schemas = document.components?.schemas ?? {};
  const renames = new Map(
    Object.keys(schemas)
      .filter((name) => name.endsWith('Input') && !(name.slice(0, -'Input'.length) in schemas))
      .map((name) => [`#/components/schemas/${name}`, `#/components/schemas/${name.slice(0, -'Input'.length)}`]),
  );
  if (renames.size === 0) return document;
  const renamed = JSON.parse(JSON.stringify(document), (key, value: unknown) =>
    key === '$ref' && typeof value === 'string' ? (renames.get(value) ?? value) : value,
  ) as OpenApiDocument;
  renamed.components!.schemas = Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [renames.get(`#/components/schemas/${name}`)?.split('/').pop() ?? name, schema]),
  );
  return renamed;
}

/**
 * The metadata key for a request schema's examples: zod leaves `examples` out of the input
 * variant of any schema holding a transform (it takes them for output values), so a request
 * body that lower-cases an email could not carry one. The finished document calls them `examples`.
 */
export const INPUT_EXAMPLES = 'inputExamples';

/** Every schema's `inputExamples` as its `examples`. */
function withInputExamples<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withInputExamples) as T;
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, child]) => [key === INPUT_EXAMPLES ? 'examples' : key, key === INPUT_EXAMPLES ? child : withInputExamples(child)]),
  ) as T;
}

/**
 * @fastify/swagger's whole-document transform, after the type provider's: every operation
 * gets its operationId, response descriptions, problem media type and headers; components
 * gain the shared headers, lose what nothing uses, and request schemas keep plain names.
 */
export function finishDocument(input: Parameters<typeof jsonSchemaTransformObject>[0]): OpenApiDocument {
  const document = jsonSchemaTransformObject(input) as OpenApiDocument;
  const paths = Object.fromEntries(
    Object.entries(document.paths ?? {}).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item).map(([method, operation]) => {
          if (!(HTTP_METHODS as readonly string[]).includes(method)) return [method, operation];
          const { [DECLARED_HEADERS]: _declared, ...rest } = operation;
          const responses = Object.fromEntries(Object.entries(operation.responses ?? {}).map(([status, response]) => [status, finishResponse(operation, status, response)]));
          return [method, { operationId: derivedOperationId(method, path), ...rest, responses }];
        }),
      ),
    ]),
  );
  const finished = withoutUnusedComponents({
    ...document,
    // Relative: the document is served by the API it describes, on whatever host that is.
    servers: [{ url: '/', description: 'The platform that serves this document' }],
    paths,
    components: { ...document.components, headers: { ...RESPONSE_HEADERS } },
  });
  return withPlainSchemaNames(withInputExamples(finished));
}

/**
 * Where an app's own document (OPENAPI_PATH) carries what each of its routes declares for the
 * edge: every route, hidden ones and HEAD twins included (the paths leave both out). The
 * edge reads it from each service at start, for its public allowlist and body limits; the
 * platform's document at /docs never has it.
 */
export const EDGE_ROUTES = 'x-edge-routes';

/** One route as its app declares it, for the edge. */
export interface EdgeRoute {
  method: string;
  /** The route's path template, as Fastify writes it: `/api/v1/orders/:id/items`. */
  path: string;
  /** Its declared `auth`; `authenticated` when it declares none. */
  auth: RouteAuth;
  /** Its own body limit, when it declares one (else the app's BODY_LIMIT). */
  bodyLimit?: number;
}

/**
 * Collects every route registered on `app` from now on; the list, read when asked, is each
 * route's final declaration (a scope's `declareAuth` fills `auth` after this hook has run).
 */
export function collectEdgeRoutes(app: App): () => EdgeRoute[] {
  const routes: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    routes.push(route as RouteOptions);
  });
  return () =>
    routes.flatMap((route) =>
      [route.method].flat().map((method) => ({
        method,
        path: route.url,
        auth: route.config?.auth ?? 'authenticated',
        ...(route.bodyLimit === undefined ? {} : { bodyLimit: route.bodyLimit }),
      })),
    );
}
