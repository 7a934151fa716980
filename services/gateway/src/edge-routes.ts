import type { ServiceName } from '@app/contracts';
import { EDGE_ROUTES, PROBLEM_MEDIA_TYPE, type DependencyCheck, type EdgeRoute, type Logger, type RouteAuth } from '@app/platform';
import { fetchUpstreamDocument, type OpenApiDocument } from './docs.js';
import type { Route } from './routing.js';

/** What the edge knows of the route a proxied request reaches, as its service declares it. */
export interface UpstreamRoute {
  auth: RouteAuth;
  /** The route's own body limit, when it declares one. */
  bodyLimit?: number;
  /**
   * Its 413 is RFC 6749 JSON, not a problem (sso's OAuth endpoints), as its service documents
   * it: the edge refusing a body too large for it answers the same.
   */
  oauthRefusal: boolean;
}

type MatchedRoute = UpstreamRoute & PathMatcher;

/** Each upstream's routes, read from its own OpenAPI document (EDGE_ROUTES) at start. */
export interface EdgeRoutes {
  /**
   * The route of `service` that `method url` reaches; undefined when none does, or when the
   * service's document is not read yet: the edge then wants a token and applies BODY_LIMIT.
   */
  find(service: ServiceName, method: string, url: string): UpstreamRoute | undefined;
  /** Ready once every upstream's routes are known: until then some public route would answer 401. */
  check: DependencyCheck;
  close(): void;
}

/** How often a document not read yet (its service not up yet) is asked for again. */
const RETRY_MS = 1_000;
/** How long one replica may take to send its document. */
const FETCH_TIMEOUT_MS = 2_000;

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A route's path as the edge matches it: a pattern, and which segments are literal (for precedence). */
interface PathMatcher {
  pattern: RegExp;
  literal: boolean[];
}

/**
 * The edge's matcher for a Fastify path template, as the services' router reads it: a whole
 * segment `:name` is any non-empty segment without a slash, the rest is literal and
 * case-sensitive, a trailing slash is optional (ignoreTrailingSlash). Anything else a template
 * may hold (wildcards, regular expressions, several parameters in a segment) gives none: such
 * a route is never opened at the edge.
 */
function pathMatcher(template: string): PathMatcher | undefined {
  const segments = template.split('/');
  const literal = segments.map((segment) => !/^:\w+$/.test(segment));
  if (segments.some((segment, i) => literal[i] && /[:*()]/.test(segment))) return undefined;
  const source = segments.map((segment, i) => (literal[i] ? escapeRegExp(segment) : '[^/]+')).join('/');
  return { pattern: new RegExp(`^${source.replace(/\/$/, '')}/?$`), literal };
}

/**
 * Whether `a` wins over `b` when both match a path, as in the services' router: at the first
 * segment where they differ, the literal one (`/products/ping` before `/products/:id`).
 */
function precedes(a: PathMatcher, b: PathMatcher): boolean {
  const at = a.literal.findIndex((literal, i) => literal !== b.literal[i]);
  return at !== -1 && a.literal[at]!;
}

/** `/a/:id` as an OpenAPI path, `/a/{id}`. */
const openApiPath = (template: string) => template.replace(/:(\w+)/g, '{$1}');

/** Whether `document` answers the route's 413 as plain JSON (RFC 6749) rather than a problem. */
function documentsOAuthRefusal(document: OpenApiDocument, route: EdgeRoute): boolean {
  const operation = (document.paths?.[openApiPath(route.path)] as Record<string, { responses?: Record<string, { content?: Record<string, unknown> }> }> | undefined)?.[
    route.method.toLowerCase()
  ];
  const media = Object.keys(operation?.responses?.['413']?.content ?? {});
  return media.includes('application/json') && !media.includes(PROBLEM_MEDIA_TYPE);
}

const isEdgeRoute = (value: unknown): value is EdgeRoute => {
  const route = value as Partial<EdgeRoute> | null;
  return (
    typeof route?.method === 'string' &&
    typeof route.path === 'string' &&
    route.auth !== undefined &&
    (route.bodyLimit === undefined || (Number.isSafeInteger(route.bodyLimit) && route.bodyLimit >= 0))
  );
};

/** A service's routes by method, from its document; none when it declares none (an older or foreign service). */
function routesOf(document: OpenApiDocument): Map<string, MatchedRoute[]> {
  const byMethod = new Map<string, MatchedRoute[]>();
  const declared = document[EDGE_ROUTES];
  for (const route of Array.isArray(declared) ? declared.filter(isEdgeRoute) : []) {
    const matcher = pathMatcher(route.path);
    if (!matcher) continue;
    const routes = byMethod.get(route.method) ?? [];
    routes.push({ ...matcher, auth: route.auth, bodyLimit: route.bodyLimit, oauthRefusal: documentsOAuthRefusal(document, route) });
    byMethod.set(route.method, routes);
  }
  return byMethod;
}

/** The route `url` reaches among one method's `routes`: of those matching its path, the one the service's router picks. */
function matchRoute(routes: readonly MatchedRoute[], url: string): UpstreamRoute | undefined {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  let found: MatchedRoute | undefined;
  for (const route of routes) {
    if (route.pattern.test(path) && (!found || precedes(route, found))) found = route;
  }
  return found && { auth: found.auth, bodyLimit: found.bodyLimit, oauthRefusal: found.oauthRefusal };
}

/**
 * Reads every upstream's routes from its OpenAPI document, once: the first attempt before the
 * gateway serves, then every RETRY_MS for the services that did not answer, until all have.
 * A service's routes are its own: a route one declares public never opens another's path.
 */
export async function readEdgeRoutes(upstreams: readonly Route[], logger: Logger): Promise<EdgeRoutes> {
  const services = new Map<ServiceName, string[]>();
  for (const route of upstreams) services.set(route.service, [...new Set([...(services.get(route.service) ?? []), ...route.urls])]);
  const known = new Map<ServiceName, Map<string, MatchedRoute[]>>();
  const read = async () => {
    await Promise.all(
      [...services].map(async ([service, urls]) => {
        if (known.has(service)) return;
        const document = await fetchUpstreamDocument(urls, FETCH_TIMEOUT_MS);
        if (document) known.set(service, routesOf(document));
      }),
    );
    return known.size === services.size;
  };
  let timer: NodeJS.Timeout | undefined;
  if (!(await read())) {
    logger.warn({ services: [...services.keys()].filter((service) => !known.has(service)) }, 'routes of some services unknown yet: their requests need a token until read');
    let reading = false;
    timer = setInterval(() => {
      if (reading) return;
      reading = true;
      read()
        .then((complete) => {
          if (complete) clearInterval(timer);
        })
        .catch((error: unknown) => logger.error({ err: error }, 'reading the services’ routes failed'))
        .finally(() => {
          reading = false;
        });
    }, RETRY_MS);
    timer.unref();
  }
  return {
    find: (service, method, url) => {
      const routes = known.get(service)?.get(method);
      return routes && matchRoute(routes, url);
    },
    check: {
      required: true,
      probe: async () => {
        if (known.size < services.size) throw new Error(`routes of ${[...services.keys()].filter((service) => !known.has(service)).join(', ')} not read yet`);
        return {};
      },
    },
    close: () => clearInterval(timer),
  };
}
