import { createHash } from 'node:crypto';
import swaggerUi from '@fastify/swagger-ui';
import { declareAuth, OPENAPI_PATH, type App } from '@app/platform';
import type { Route } from './routing.js';

export type OpenApiDocument = {
  openapi?: string;
  info?: Record<string, unknown>;
  paths?: Record<string, unknown>;
  tags?: { name: string; description?: string }[];
  components?: Record<string, Record<string, unknown> | undefined>;
  [key: string]: unknown;
};

/** How long a merged document is served before the upstreams are asked again. */
const DOCS_TTL_MS = 30_000;

/**
 * Merges every upstream's own OpenAPI document into one: paths, tags and components side by
 * side. A service that does not answer is left out (and listed in `x-unavailable-services`)
 * rather than failing the whole document.
 */
export function mergeDocuments(base: OpenApiDocument, parts: { service: string; document?: OpenApiDocument }[]): OpenApiDocument {
  const merged: OpenApiDocument = {
    ...base,
    paths: { ...base.paths },
    tags: [...(base.tags ?? [])],
    components: Object.fromEntries(Object.entries(base.components ?? {}).map(([kind, entries]) => [kind, { ...entries }])),
  };
  const unavailable: string[] = [];
  for (const { service, document } of parts) {
    if (!document) {
      unavailable.push(service);
      continue;
    }
    Object.assign(merged.paths!, document.paths);
    for (const tag of document.tags ?? []) {
      if (!merged.tags!.some((known) => known.name === tag.name)) merged.tags!.push(tag);
    }
    for (const [kind, entries] of Object.entries(document.components ?? {})) {
      merged.components![kind] = { ...entries, ...merged.components![kind] };
    }
  }
  // Tags used by operations but not declared still get an entry, so the UI groups by them;
  // sorted, so the document is the same whichever order its parts came in (either mode).
  const used = Object.values(merged.paths ?? {}).flatMap((item) =>
    Object.values(item as Record<string, { tags?: string[] }>).flatMap((operation) => operation?.tags ?? []),
  );
  for (const name of used) {
    if (!merged.tags!.some((known) => known.name === name)) merged.tags!.push({ name });
  }
  merged.tags!.sort((a, b) => a.name.localeCompare(b.name));
  if (unavailable.length > 0) merged['x-unavailable-services'] = unavailable;
  return merged;
}

async function fetchDocument(url: string, timeoutMs: number): Promise<OpenApiDocument | undefined> {
  try {
    const response = await fetch(new URL(OPENAPI_PATH, url), { signal: AbortSignal.timeout(timeoutMs) });
    return response.ok ? ((await response.json()) as OpenApiDocument) : undefined;
  } catch {
    return undefined;
  }
}

/** A service's own OpenAPI document from the first of its replicas (`urls`) that sends it: they run one release. */
export async function fetchUpstreamDocument(urls: readonly string[], timeoutMs: number): Promise<OpenApiDocument | undefined> {
  for (const url of urls) {
    const document = await fetchDocument(url, timeoutMs);
    if (document) return document;
  }
  return undefined;
}

/**
 * The one inline style swagger-ui uses: the <style> inside its topbar's logo SVG, which React
 * renders before the initializer swaps the logo for an image. Allowed by its hash, so no other
 * inline style is; a swagger-ui upgrade that changes it shows up as a CSP violation in the
 * docs page test.
 */
const SWAGGER_UI_LOGO_STYLE = '.logo_small_svg__cls-2{fill:#fff}.logo_small_svg__cls-3{fill:#85ea2d}';

/**
 * The docs page's Content-Security-Policy: what swagger-ui needs and nothing more. Scripts,
 * styles, fonts and images are its own files under /docs (the replaced logo is a data: image);
 * it fetches the document, and "Try it out" calls the API, on this origin only. No validator
 * badge (swagger-ui's `validatorUrl` is off), so nothing goes to another site; and no
 * `upgrade-insecure-requests`, which would send a plain-HTTP deployment's own files to https.
 */
const DOCS_CSP: Record<string, string[]> = {
  'default-src': ["'self'"],
  'base-uri': ["'self'"],
  'connect-src': ["'self'"],
  'font-src': ["'self'", 'data:'],
  'form-action': ["'self'"],
  'frame-ancestors': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'object-src': ["'none'"],
  'script-src': ["'self'"],
  'script-src-attr': ["'none'"],
  'style-src': ["'self'", `'sha256-${createHash('sha256').update(SWAGGER_UI_LOGO_STYLE).digest('base64')}'`],
};

/** The title and description of the platform's one API document, in either mode. */
export const PLATFORM_TITLE = 'API platform';
export const PLATFORM_DESCRIPTION =
  'One gateway in front of the identity, credentials, sso, crud and health services. ' +
  'Errors are RFC 9457 problem+json, localized by Accept-Language.';

/**
 * Serves the OpenAPI 3.1 document at /docs/json and the interactive UI at /docs. With
 * `upstreams` (the gateway in split mode) the document merges each service's own; without,
 * it is this app's own (the all-in-one, where every service's routes are in it already).
 */
export async function registerDocs(app: App, options: { upstreams?: Route[] } = {}): Promise<void> {
  const upstreams = [...new Map((options.upstreams ?? []).map((route) => [route.service, route.urls])).entries()];
  let cached: { at: number; parts: { service: string; document?: OpenApiDocument }[] } | undefined;
  let refreshing: Promise<void> | undefined;

  const refresh = async () => {
    const parts = await Promise.all(
      upstreams.map(async ([service, urls]) => ({ service, document: await fetchUpstreamDocument(urls, 2_000) })),
    );
    cached = { at: Date.now(), parts };
  };

  await app.register(async (scope) => {
    declareAuth(scope as App, 'public');
    // The platform's address opens its docs.
    scope.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect('/docs', 302));
    await scope.register(swaggerUi, {
      routePrefix: '/docs',
      staticCSP: DOCS_CSP,
      uiConfig: { deepLinking: true, persistAuthorization: true, validatorUrl: null },
      uiHooks: {
        preHandler: async (request) => {
          if (upstreams.length === 0 || !request.url.startsWith('/docs/json')) return;
          const complete = cached?.parts.every((part) => part.document);
          if (!cached || Date.now() - cached.at > DOCS_TTL_MS || !complete) {
            refreshing ??= refresh().finally(() => {
              refreshing = undefined;
            });
            await refreshing;
          }
        },
      },
      transformSpecification: (spec) =>
        mergeDocuments(
          { ...(spec as OpenApiDocument), info: { title: PLATFORM_TITLE, version: (spec as OpenApiDocument).info?.version, description: PLATFORM_DESCRIPTION } },
          cached?.parts ?? [],
        ),
    });
  });
}
