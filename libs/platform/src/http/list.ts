import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { filterValueOf, type FilterValue } from './filters.js';
import { defineMessages, issueKey } from './i18n.js';

/*
 * The list conventions of DESIGN "API conventions", for every collection of every service:
 * `limit` and keyset paging by an opaque `cursor` (or `offset`, which reads every row it skips),
 * `sort=field|-field` (ties broken by id, so the order is total and a cursor names one place
 * in it), typed filters (filters.ts), RFC 8288 `Link` to the neighbouring pages, and a total
 * only when asked for with `Prefer: count=exact` or `count=estimated`, answered the way
 * PostgREST (the model DESIGN names) answers it.
 */

/** Largest page: bounds what one request can make the database read. */
export const MAX_LIMIT = 100;
export const DEFAULT_LIMIT = 20;
/** Newest first unless the caller says otherwise. */
export const DEFAULT_SORT = '-createdAt';
/**
 * `count=estimated` counts exactly up to this many records and answers the planner's estimate
 * beyond (PostgREST's db-max-rows threshold): a small list gets its true total for little, and
 * a large one never pays for counting every match.
 */
export const EXACT_BELOW = 1000;

/** The paging parameters of a parsed list query, before they are split from its filters. */
export interface PagingQuery {
  limit: number;
  /** Absent unless the caller gave it: a list without offset pages by cursor. */
  offset?: number | undefined;
  sort: string;
  /** Where the page starts, decoded from the `cursor` parameter and checked against the query. */
  cursor?: SortKey | undefined;
}

/** A row's place in a sorted list: its sort field's value and its id (the tie-breaker). */
export interface SortKey {
  value: FilterValue | null;
  id: string;
}

/** One page of a list, as a repository reads it: `sort` already split into field and direction. */
export interface Page {
  limit: number;
  offset: number;
  sort: { field: string; direction: 'asc' | 'desc' };
  /**
   * `keyset` unless the caller gave `offset`: the page starts after `after` (or at the start),
   * and the next one is linked by cursor. `offset` pages keep linking by offset.
   */
  paging: 'keyset' | 'offset';
  /** The row the page starts after (keyset paging from a cursor). */
  after?: SortKey;
  /** The sort and the filters, hashed: a cursor made for another list is refused. */
  fingerprint: string;
}

/** `true`/`false` in a query string (anything else is a 400, not a silent `false`). */
export const booleanParam = z.enum(['true', 'false']).transform((value) => value === 'true');
/** An ISO 8601 instant in a query string. */
export const instantParam = z.iso.datetime({ offset: true }).transform((value) => new Date(value));

/** The longest cursor: a sort value of a few kilobytes fits; a longer one is abuse, refused before any decoding. */
const MAX_CURSOR_LENGTH = 8192;

defineMessages({
  en: {
    'list.cursor.malformed': 'This cursor was not made by this list; follow the Link header of a page, or start again without cursor.',
    'list.cursor.otherQuery': 'This cursor was made for another sort or other filters; keep those of the page whose Link gave it, or start again without cursor.',
    'list.cursor.withOffset': 'A cursor already says where the page starts; give cursor or offset, not both.',
  },
  'pt-BR': {
    'list.cursor.malformed': 'Este cursor não foi feito por esta lista; siga o cabeçalho Link de uma página ou recomece sem cursor.',
    'list.cursor.otherQuery': 'Este cursor foi feito para outra ordenação ou outros filtros; mantenha os da página cujo Link o deu ou recomece sem cursor.',
    'list.cursor.withOffset': 'Um cursor já diz onde a página começa; informe cursor ou offset, não os dois.',
  },
  es: {
    'list.cursor.malformed': 'Este cursor no lo hizo esta lista; siga la cabecera Link de una página o empiece de nuevo sin cursor.',
    'list.cursor.otherQuery': 'Este cursor se hizo para otro orden u otros filtros; mantenga los de la página cuyo Link lo dio o empiece de nuevo sin cursor.',
    'list.cursor.withOffset': 'Un cursor ya indica dónde empieza la página; indique cursor u offset, no ambos.',
  },
  fr: {
    'list.cursor.malformed': "Ce curseur n'a pas été fait par cette liste ; suivez l'en-tête Link d'une page, ou recommencez sans cursor.",
    'list.cursor.otherQuery': "Ce curseur a été fait pour un autre tri ou d'autres filtres ; gardez ceux de la page dont le Link l'a donné, ou recommencez sans cursor.",
    'list.cursor.withOffset': 'Un curseur dit déjà où la page commence ; donnez cursor ou offset, pas les deux.',
  },
  de: {
    'list.cursor.malformed': 'Dieser Cursor stammt nicht von dieser Liste; folgen Sie dem Link-Header einer Seite oder beginnen Sie ohne cursor neu.',
    'list.cursor.otherQuery':
      'Dieser Cursor wurde für eine andere Sortierung oder andere Filter erstellt; behalten Sie die der Seite, deren Link ihn lieferte, oder beginnen Sie ohne cursor neu.',
    'list.cursor.withOffset': 'Ein Cursor sagt bereits, wo die Seite beginnt; geben Sie cursor oder offset an, nicht beides.',
  },
});

const PAGING_KEYS: readonly string[] = ['limit', 'offset', 'sort', 'cursor'] satisfies (keyof PagingQuery)[];

/** The filters of a parsed query that were given. */
const givenFilters = (query: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(query).filter(([key, value]) => !PAGING_KEYS.includes(key) && value !== undefined));

const digest = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('base64url').slice(0, 22);

/**
 * The sort and filters of a list, hashed: fields in order, the conditions of each sorted
 * (they are ANDed), so the same list always has the same fingerprint whatever order the
 * parameters came in, and a filter's value as parsed (`?price=10` and `?price=eq.10` agree).
 */
export function listFingerprint(sort: string, filters: Record<string, unknown>): string {
  const entries = Object.keys(filters)
    .sort()
    .map((key) => [key, [filters[key]].flat().map((condition) => JSON.stringify(condition)).sort()]);
  return digest([sort, entries]);
}

/*
 * A cursor is base64url JSON: the fingerprint of the list it was made for, the last row's sort
 * value (as text) and id, and a checksum over them. The checksum is no secret: it refuses a
 * cursor edited by hand or cut short, and a forged one could only start a page where a filter
 * on the same field would. Every part is then checked strictly (the value by the sort field's
 * own filter schema) before any of it reaches SQL.
 */
const cursorPayload = z.strictObject({
  f: z.string().length(22),
  v: z.string().nullable(),
  id: z.uuid(),
  c: z.string().length(22),
});

/** The text a sort value travels as in a cursor, parsed back by the field's filter schema. */
const cursorText = (value: unknown): string | null => (value === null || value === undefined ? null : value instanceof Date ? value.toISOString() : String(value));

/** The cursor of the page after the row `last` of the list `fingerprint`. */
export function encodeCursor(fingerprint: string, last: { value: unknown; id: string }): string {
  const v = cursorText(last.value);
  return Buffer.from(JSON.stringify({ f: fingerprint, v, id: last.id, c: digest([fingerprint, v, last.id]) })).toString('base64url');
}

/** A cursor's parts, or undefined when it is not one this kit made (or was edited). */
function decodeCursor(cursor: string): z.infer<typeof cursorPayload> | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = cursorPayload.safeParse(json);
  if (!parsed.success || parsed.data.c !== digest([parsed.data.f, parsed.data.v, parsed.data.id])) return undefined;
  return parsed.data;
}

/**
 * The query schema of a list: `limit`, `offset` or `cursor`, `sort` over the `sortable` fields
 * (each ascending or, prefixed by `-`, descending) and the given filters (`filterParam`), which
 * should all be optional; any other parameter is a 400. A cursor is decoded and held to the
 * query here, so a bad one is a 400 naming `cursor`: one that is not ours or was edited, one
 * made for another sort or filters, one given with `offset`. Its sort value is parsed by the
 * sort field's filter schema (a string for a field without one).
 */
export function listQuerySchema<Filters extends z.ZodRawShape>(sortable: readonly [string, ...string[]], filters: Filters) {
  const sortValues = [...sortable, ...sortable.map((field) => `-${field}`)] as [string, ...string[]];
  // Every list's id is a UUID (the tie-breaker is bound as one).
  const valueOf = (field: string) => (field === 'id' ? z.uuid() : (filterValueOf(Object.hasOwn(filters, field) ? filters[field] : undefined) ?? z.string()));
  const object = z.strictObject({
      limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT).describe(`Page size, 1 to ${MAX_LIMIT}`),
      offset: z.coerce
        .number()
        .int()
        .min(0)
        .optional()
        .describe('Records to skip. The database still reads every skipped record, so a deep offset is slow: page with cursor instead'),
      cursor: z
        .string()
        .max(MAX_CURSOR_LENGTH)
        .optional()
        .describe(
          'Where the page starts: the opaque value of the Link header\'s rel="next", valid only with the same sort and filters. ' +
            'Stable while records are added and removed, and as fast at any depth',
        ),
      sort: z
        .enum(sortValues)
        .default(DEFAULT_SORT)
        .describe('A field, ascending, or descending when prefixed by "-"; ties are broken by id; no value sorts after every value'),
      ...filters,
    });
  type Parsed = Omit<z.output<typeof object>, 'cursor'> & { cursor?: SortKey | undefined };
  return object.transform((parsed, ctx): Parsed => {
    const query = parsed as Record<string, unknown> & { offset?: number; sort: string; cursor?: string };
    const cursor = query.cursor;
    if (cursor === undefined) return parsed as Parsed;
    const refuse = (key: string) => {
      ctx.addIssue({ code: 'custom', path: ['cursor'], input: cursor, message: key, ...issueKey(key) });
      return z.NEVER;
    };
    if (query.offset !== undefined) return refuse('list.cursor.withOffset');
    const payload = decodeCursor(cursor);
    if (!payload) return refuse('list.cursor.malformed');
    if (payload.f !== listFingerprint(query.sort, givenFilters(query))) return refuse('list.cursor.otherQuery');
    const field = query.sort.startsWith('-') ? query.sort.slice(1) : query.sort;
    const value = payload.v === null ? { success: true as const, data: null } : valueOf(field).safeParse(payload.v);
    if (!value.success) return refuse('list.cursor.malformed');
    return { ...(parsed as Parsed), cursor: { value: value.data, id: payload.id } };
  });
}

/** Splits a parsed list query into its page and its filters (only those that were given). */
export function pageOf<Q extends PagingQuery>(query: Q): { page: Page; filters: Omit<Q, keyof PagingQuery> } {
  const { limit, offset, sort, cursor } = query;
  const descending = sort.startsWith('-');
  const given = givenFilters(query as PagingQuery & Record<string, unknown>);
  return {
    page: {
      limit,
      offset: offset ?? 0,
      sort: { field: descending ? sort.slice(1) : sort, direction: descending ? 'desc' : 'asc' },
      paging: offset === undefined ? 'keyset' : 'offset',
      ...(cursor ? { after: cursor } : {}),
      fingerprint: listFingerprint(sort, given),
    },
    filters: given as Omit<Q, keyof PagingQuery>,
  };
}

/** The `Prefer` request header (RFC 7240) of a list; bounded so a huge header is a 400, not work. */
export const preferHeader = z
  .string()
  .max(200)
  .optional()
  .describe(
    '"count=exact" adds the total as Content-Range: <first>-<last>/<total>; "count=estimated" adds the planner\'s estimate ' +
      `instead, exact while it is at most ${EXACT_BELOW} (PostgREST's count=estimated), and costs no count of a large list`,
  );

/** The headers schema of a list route. Loose: a route's headers schema replaces request.headers with what it parses. */
export const listHeadersSchema = z.looseObject({ prefer: preferHeader });

/** The totals a list offers: counted, or the planner's estimate (see `EXACT_BELOW`). */
export type CountPreference = 'exact' | 'estimated';

/**
 * The count the request's `Prefer` header asks for, alone or among other preferences
 * (`return=minimal, count=exact`); `exact` when it asks for both. PostgREST's `planned` is not
 * offered and is ignored: no total is computed.
 */
export function countPreference(request: FastifyRequest): CountPreference | undefined {
  const header = request.headers.prefer;
  if (header === undefined) return undefined;
  const tokens = [header].flat().flatMap((value) => value.split(/[,;]/).map((token) => token.trim().toLowerCase()));
  if (tokens.includes('count=exact')) return 'exact';
  return tokens.includes('count=estimated') ? 'estimated' : undefined;
}

/** What the paging headers are computed from besides the page that was asked for. */
export interface PageResult {
  /** Records in this answer. */
  returned: number;
  /** Whether a record follows this page (read as one row past the limit, never counted). */
  hasMore: boolean;
  /** All records matching the filters (or their estimate); present only when `Prefer` asked for it. */
  total?: number;
  /** The sort value and id of the page's last record: the next page's cursor is made of them. */
  last?: { value: unknown; id: string };
}

/**
 * Sets the paging headers of a list answer:
 * - `Link` (RFC 8288), each URL the request's own path and query (relative, so it holds behind
 *   the edge) with every other parameter kept. Paged by cursor (the default): `rel="next"` with
 *   the cursor after this page's last record when another follows, and `rel="first"` (no
 *   cursor) when this page came from one. Paged by `offset`: `rel="next"` and `rel="prev"`
 *   with `offset` and `limit` set.
 * - With a total, PostgREST's `Content-Range: <first>-<last>/<total>` (`*\/<total>` for an
 *   empty page, and for a cursor's page, whose position is not known without counting) and
 *   `Preference-Applied` with the count given.
 */
export function setPagingHeaders(request: FastifyRequest, reply: FastifyReply, page: Page, result: PageResult): void {
  const query = request.url.indexOf('?');
  const path = query < 0 ? request.url : request.url.slice(0, query);
  const rawQuery = query < 0 ? '' : request.url.slice(query + 1);
  const linkTo = (rel: string, set: Record<string, string>) => {
    const params = new URLSearchParams(rawQuery);
    params.delete('cursor');
    for (const [name, value] of Object.entries(set)) params.set(name, value);
    return `<${path}?${params.toString()}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (page.paging === 'offset') {
    const limit = String(page.limit);
    if (result.hasMore) links.push(linkTo('next', { offset: String(page.offset + page.limit), limit }));
    if (page.offset > 0) links.push(linkTo('prev', { offset: String(Math.max(0, page.offset - page.limit)), limit }));
  } else {
    if (result.hasMore && result.last) links.push(linkTo('next', { cursor: encodeCursor(page.fingerprint, result.last) }));
    if (page.after) links.push(linkTo('first', {}));
  }
  if (links.length > 0) reply.header('link', links.join(', '));
  const counted = countPreference(request);
  if (result.total !== undefined && counted) {
    const range = result.returned > 0 && !page.after ? `${page.offset}-${page.offset + result.returned - 1}` : '*';
    reply.header('content-range', `${range}/${result.total}`);
    reply.header('preference-applied', `count=${counted}`);
  }
}
