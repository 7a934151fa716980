import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

/*
 * The list conventions of DESIGN "API conventions", for every collection of every service:
 * `limit`/`offset` paging, `sort=field|-field` (ties broken by id), typed filters (filters.ts),
 * RFC 8288 `Link` to the neighbouring pages, and a total only when asked for with
 * `Prefer: count=exact`, answered the way PostgREST (the model DESIGN names) answers it.
 */

/** Largest page: bounds what one request can make the database read. */
export const MAX_LIMIT = 100;
export const DEFAULT_LIMIT = 20;
/** Newest first unless the caller says otherwise. */
export const DEFAULT_SORT = '-createdAt';

/** The paging parameters of a parsed list query, before they are split from its filters. */
export interface PagingQuery {
  limit: number;
  offset: number;
  sort: string;
}

/** One page of a list, as a repository reads it: `sort` already split into field and direction. */
export interface Page {
  limit: number;
  offset: number;
  sort: { field: string; direction: 'asc' | 'desc' };
}

/** `true`/`false` in a query string (anything else is a 400, not a silent `false`). */
export const booleanParam = z.enum(['true', 'false']).transform((value) => value === 'true');
/** An ISO 8601 instant in a query string. */
export const instantParam = z.iso.datetime({ offset: true }).transform((value) => new Date(value));

/**
 * The query schema of a list: `limit`, `offset`, `sort` over the `sortable` fields (each
 * ascending or, prefixed by `-`, descending) and the given filters (`filterParam`), which should
 * all be optional; any other parameter is a 400.
 */
export function listQuerySchema<Filters extends z.ZodRawShape>(sortable: readonly [string, ...string[]], filters: Filters) {
  const sortValues = [...sortable, ...sortable.map((field) => `-${field}`)] as [string, ...string[]];
  return z.strictObject({
    limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT).describe(`Page size, 1 to ${MAX_LIMIT}`),
    offset: z.coerce.number().int().min(0).default(0).describe('Records to skip'),
    sort: z
      .enum(sortValues)
      .default(DEFAULT_SORT)
      .describe('A field, ascending, or descending when prefixed by "-"; ties are broken by id'),
    ...filters,
  });
}

/** Splits a parsed list query into its page and its filters (only those that were given). */
export function pageOf<Q extends PagingQuery>(query: Q): { page: Page; filters: Omit<Q, keyof PagingQuery> } {
  const { limit, offset, sort, ...filters } = query;
  const descending = sort.startsWith('-');
  const given = Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== undefined));
  return {
    page: { limit, offset, sort: { field: descending ? sort.slice(1) : sort, direction: descending ? 'desc' : 'asc' } },
    filters: given as Omit<Q, keyof PagingQuery>,
  };
}

/** The `Prefer` request header (RFC 7240) of a list; bounded so a huge header is a 400, not work. */
export const preferHeader = z
  .string()
  .max(200)
  .optional()
  .describe('"count=exact" adds the total as Content-Range: <first>-<last>/<total>');

/** The headers schema of a list route. Loose: a route's headers schema replaces request.headers with what it parses. */
export const listHeadersSchema = z.looseObject({ prefer: preferHeader });

/**
 * True when the request's `Prefer` header asks for `count=exact`, alone or among other
 * preferences (`return=minimal, count=exact`). Other count preferences (PostgREST's
 * `planned`, `estimated`) are not offered and so are ignored: no total is computed.
 */
export function wantsExactCount(request: FastifyRequest): boolean {
  const header = request.headers.prefer;
  if (header === undefined) return false;
  return [header]
    .flat()
    .some((value) => value.split(/[,;]/).some((token) => token.trim().toLowerCase() === 'count=exact'));
}

/** What the paging headers are computed from besides the page that was asked for. */
export interface PageResult {
  /** Records in this answer. */
  returned: number;
  /** Whether a record follows this page (read as one row past the limit, never counted). */
  hasMore: boolean;
  /** All records matching the filters; present only when `Prefer: count=exact` asked for it. */
  total?: number;
}

/**
 * Sets the paging headers of a list answer:
 * - `Link` (RFC 8288) with `rel="next"` when another page exists and `rel="prev"` when this
 *   one does not start at 0. Each URL is the request's own path and query (relative, so it
 *   holds behind the edge) with `offset` and `limit` set; every other parameter is kept.
 * - With a total, PostgREST's `Content-Range: <first>-<last>/<total>` (`*\/<total>` for an
 *   empty page) and `Preference-Applied: count=exact`.
 */
export function setPagingHeaders(request: FastifyRequest, reply: FastifyReply, page: Page, result: PageResult): void {
  const query = request.url.indexOf('?');
  const path = query < 0 ? request.url : request.url.slice(0, query);
  const rawQuery = query < 0 ? '' : request.url.slice(query + 1);
  const linkTo = (offset: number, rel: string) => {
    const params = new URLSearchParams(rawQuery);
    params.set('offset', String(offset));
    params.set('limit', String(page.limit));
    return `<${path}?${params.toString()}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (result.hasMore) links.push(linkTo(page.offset + page.limit, 'next'));
  if (page.offset > 0) links.push(linkTo(Math.max(0, page.offset - page.limit), 'prev'));
  if (links.length > 0) reply.header('link', links.join(', '));
  if (result.total !== undefined) {
    const range = result.returned > 0 ? `${page.offset}-${page.offset + result.returned - 1}` : '*';
    reply.header('content-range', `${range}/${result.total}`);
    reply.header('preference-applied', 'count=exact');
  }
}
