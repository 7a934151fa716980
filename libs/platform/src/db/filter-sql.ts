import type { FilterCondition, ListFilters } from '../http/filters.js';
import { EXACT_BELOW, type CountPreference, type Page, type SortKey } from '../http/list.js';
import { quoteIdent, type SqlSession } from './database.js';

/** Where a filterable field lives in SQL. */
export interface FilterColumn {
  /** The column's name in the table (quoted here). */
  column: string;
  /** The Postgres type its values are cast to (`text`, `numeric`, `timestamptz`, ...), so no value is bound by guess. */
  type: string;
  /** An array column: `eq` means "holds the value", `in` "holds any of them". */
  array?: boolean;
  /** The column may hold null: a keyset page after a value must still reach the nulls, which sort last. */
  nullable?: boolean;
}

const COMPARISONS = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/**
 * A `like`/`ilike` pattern from a filter's: `*` is the wildcard, and `%`, `_` and `\`, which
 * LIKE would read as wildcards or as its escape, are escaped to match themselves.
 */
export function likePattern(pattern: string): string {
  return pattern.replace(/[\\%_]/g, '\\$&').replace(/\*/g, '%');
}

/** One condition as SQL; every value is pushed to `params` and referenced by number with a cast. */
function conditionSql(target: FilterColumn, condition: FilterCondition, params: unknown[]): string {
  const column = quoteIdent(target.column);
  const bind = (value: unknown) => {
    params.push(value);
    return `$${params.length}::${target.type}`;
  };
  let sql: string;
  switch (condition.operator) {
    case 'like':
    case 'ilike':
      params.push(likePattern(condition.value));
      sql = `${column} ${condition.operator} $${params.length}::text escape '\\'`;
      break;
    case 'is':
      // The operand is one of three keywords, never text from the request.
      sql = `${column} is ${condition.value === null ? 'null' : condition.value ? 'true' : 'false'}`;
      break;
    case 'in': {
      const values = condition.value.map(bind).join(', ');
      sql = target.array ? `${column} && array[${values}]` : `${column} in (${values})`;
      break;
    }
    default:
      if (target.array) {
        if (condition.operator !== 'eq' && condition.operator !== 'neq') throw new Error(`operator ${condition.operator} on array ${target.column}`);
        sql = `${condition.operator === 'neq' ? 'not ' : ''}${bind(condition.value)} = any(${column})`;
      } else {
        sql = `${column} ${COMPARISONS[condition.operator]} ${bind(condition.value)}`;
      }
  }
  return condition.negated ? `not (${sql})` : sql;
}

/**
 * The `where` clause of a list's filters (empty when there are none), conditions ANDed in a
 * fixed order (fields sorted) so one filter set always gives one SQL text. Identifiers come
 * from `columns`, declared in code; a filter on a field it does not name is a programming
 * error (the query schema rejects unknown fields first), so it throws.
 */
export function filtersWhere(filters: ListFilters, columns: Readonly<Record<string, FilterColumn>>, params: unknown[]): string {
  return whereOf(filterConditions(filters, columns, params));
}

const whereOf = (conditions: readonly string[]) => (conditions.length > 0 ? ` where ${conditions.join(' and ')}` : '');

function filterConditions(filters: ListFilters, columns: Readonly<Record<string, FilterColumn>>, params: unknown[]): string[] {
  const conditions: string[] = [];
  for (const field of Object.keys(filters).sort()) {
    const target = Object.hasOwn(columns, field) ? columns[field] : undefined;
    if (!target) throw new Error(`no column is declared for the filter "${field}"`);
    for (const condition of filters[field] ?? []) conditions.push(conditionSql(target, condition, params));
  }
  return conditions;
}

/**
 * The rows after `after` in the order `order by <column> <direction>, "id" <direction>`, whose
 * nulls sort after every value (Postgres's default: last ascending, first descending), so a
 * descending page reads an index on (column, id) backwards. A row comparison, so with an index
 * on (column, id), behind any equality-filtered columns, the page starts with one index probe.
 */
function keysetCondition(sort: FilterColumn, direction: 'asc' | 'desc', after: SortKey, params: unknown[]): string {
  const column = quoteIdent(sort.column);
  params.push(after.id);
  const id = `$${params.length}::uuid`;
  if (after.value === null) {
    return direction === 'asc' ? `(${column} is null and "id" > ${id})` : `(${column} is null and "id" < ${id} or ${column} is not null)`;
  }
  params.push(after.value);
  const rows = `(${column}, "id") ${direction === 'asc' ? '>' : '<'} ($${params.length}::${sort.type}, ${id})`;
  return direction === 'asc' && sort.nullable ? `(${rows} or ${column} is null)` : rows;
}

/** The planner's estimate of the rows `sql` answers (EXPLAIN, format json): no row is read. */
async function plannedRows(client: RawQueryClient, sql: string, params: unknown[]): Promise<number> {
  const [plan] = await client.$queryRawUnsafe<Record<string, unknown>[]>(`explain (format json) ${sql}`, ...params);
  const json = plan && Object.values(plan)[0];
  const parsed = (typeof json === 'string' ? JSON.parse(json) : json) as [{ Plan: { 'Plan Rows': number } }];
  return Math.round(parsed[0].Plan['Plan Rows']);
}

/**
 * How many rows of `from` match `where`: counted (`exact`), or (`estimated`) the planner's
 * estimate when it exceeds EXACT_BELOW, else counted with a limit of EXACT_BELOW + 1 rows, so
 * a poor estimate costs at most that; a count that reaches the limit disproves the estimate
 * and the larger of the two is answered (PostgREST's count=estimated, with db-max-rows).
 */
export async function countRows(client: RawQueryClient, from: string, where: string, params: unknown[], count: CountPreference): Promise<number> {
  const counted = async (limit: string) => {
    const rows = await client.$queryRawUnsafe<{ total: number }[]>(`select count(*)::int4 as total from (select 1 from ${from}${where}${limit}) matching`, ...params);
    return Number(rows[0]?.total ?? 0);
  };
  if (count === 'exact') return counted('');
  const estimate = await plannedRows(client, `select 1 from ${from}${where}`, params);
  if (estimate > EXACT_BELOW) return estimate;
  const bounded = await counted(` limit ${EXACT_BELOW + 1}`);
  return bounded > EXACT_BELOW ? Math.max(estimate, bounded) : bounded;
}

/** What `readFilteredPage` needs of a Prisma client: its raw query (a generated client satisfies it). */
export interface RawQueryClient {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
}

/** A table read by `readFilteredPage`. */
export interface FilteredTable {
  /** The table, schema-qualified and quoted. */
  from: string;
  /**
   * The select list, aliasing columns to the field names the caller's rows use. An alias may
   * name a value it computes from its column (a timestamp formatted): the order is the column's.
   */
  select: string;
  /** The column of every field a list may filter or sort on. */
  columns: Readonly<Record<string, FilterColumn>>;
}

/**
 * The one row of `table` that `where` names (a condition on a unique key, with `params`), as
 * its list shapes rows, or null: the look-ups of a hot path, on the database port itself.
 */
export async function readTableRow<Row>(session: SqlSession, table: FilteredTable, where: string, params: unknown[]): Promise<Row | null> {
  return (await session.query<Row>(`select ${table.select} from ${table.from} where ${where}`, params))[0] ?? null;
}

/** A page as `readFilteredPage` reads it: its rows, whether more follow, the total when asked, and the last row's sort key. */
export interface FilteredPage<Row> {
  rows: Row[];
  hasMore: boolean;
  total?: number;
  last?: { value: unknown; id: string };
}

/**
 * One page of a table's rows matching the filters, in the page's order (ties broken by id, so
 * the order is total), starting after the page's cursor or at its offset, plus whether another
 * page follows (one row more is read, never counted), the sort key of its last row (the next
 * cursor) and, when asked, the total: the list of every table the kit serves, in raw SQL
 * because Prisma's query API has neither LIKE with a caller's pattern nor row comparisons.
 * The table's rows are selected with the fields' names, `id` among them.
 */
export async function readFilteredPage<Row>(
  client: RawQueryClient,
  table: FilteredTable,
  filters: ListFilters,
  page: Page,
  count: CountPreference | undefined,
): Promise<FilteredPage<Row>> {
  const params: unknown[] = [];
  const conditions = filterConditions(filters, table.columns, params);
  const filtered = [...params];
  const sort = Object.hasOwn(table.columns, page.sort.field) ? table.columns[page.sort.field] : undefined;
  if (!sort) throw new Error(`no column is declared for the sort field "${page.sort.field}"`);
  const direction = page.sort.direction === 'desc' ? 'desc' : 'asc';
  const where = whereOf(page.after ? [...conditions, keysetCondition(sort, direction, page.after, params)] : conditions);
  params.push(page.limit + 1);
  let sql = `select ${table.select} from ${table.from}${where} order by ${table.from}.${quoteIdent(sort.column)} ${direction}, "id" ${direction} limit $${params.length}::int8`;
  if (page.offset > 0) {
    params.push(page.offset);
    sql += ` offset $${params.length}::int8`;
  }
  const [rows, total] = await Promise.all([
    client.$queryRawUnsafe<Row[]>(sql, ...params),
    count ? countRows(client, table.from, whereOf(conditions), filtered, count) : undefined,
  ]);
  const found = rows.slice(0, page.limit);
  const last = found.at(-1) as Record<string, unknown> | undefined;
  return {
    rows: found,
    hasMore: rows.length > page.limit,
    ...(last ? { last: { value: last[page.sort.field], id: String(last.id) } } : {}),
    ...(total === undefined ? {} : { total }),
  };
}
