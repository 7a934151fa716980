import type { FilterCondition, ListFilters } from '../http/filters.js';
import type { Page } from '../http/list.js';
import { quoteIdent } from './database.js';

/** Where a filterable field lives in SQL. */
export interface FilterColumn {
  /** The column's name in the table (quoted here). */
  column: string;
  /** The Postgres type its values are cast to (`text`, `numeric`, `timestamptz`, ...), so no value is bound by guess. */
  type: string;
  /** An array column: `eq` means "holds the value", `in` "holds any of them". */
  array?: boolean;
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
  const conditions: string[] = [];
  for (const field of Object.keys(filters).sort()) {
    const target = Object.hasOwn(columns, field) ? columns[field] : undefined;
    if (!target) throw new Error(`no column is declared for the filter "${field}"`);
    for (const condition of filters[field] ?? []) conditions.push(conditionSql(target, condition, params));
  }
  return conditions.length > 0 ? ` where ${conditions.join(' and ')}` : '';
}

/** What `readFilteredPage` needs of a Prisma client: its raw query (a generated client satisfies it). */
export interface RawQueryClient {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
}

/** A table read by `readFilteredPage`. */
export interface FilteredTable {
  /** The table, schema-qualified and quoted. */
  from: string;
  /** The select list, aliasing columns to the field names the caller's rows use. */
  select: string;
  /** The column of every field a list may filter or sort on. */
  columns: Readonly<Record<string, FilterColumn>>;
}

/**
 * One page of a table's rows matching the filters, in the page's order (ties broken by id),
 * plus whether another page follows (one row more is read, never counted) and, when asked,
 * the total: the list of a Prisma-modelled table, in raw SQL because Prisma's query API has
 * no LIKE with a caller's pattern.
 */
export async function readFilteredPage<Row>(
  client: RawQueryClient,
  table: FilteredTable,
  filters: ListFilters,
  page: Page,
  count: boolean,
): Promise<{ rows: Row[]; hasMore: boolean; total?: number }> {
  const params: unknown[] = [];
  const where = filtersWhere(filters, table.columns, params);
  const sort = Object.hasOwn(table.columns, page.sort.field) ? table.columns[page.sort.field] : undefined;
  if (!sort) throw new Error(`no column is declared for the sort field "${page.sort.field}"`);
  const direction = page.sort.direction === 'desc' ? 'desc' : 'asc';
  const [rows, counted] = await Promise.all([
    client.$queryRawUnsafe<Row[]>(
      `select ${table.select} from ${table.from}${where} order by ${quoteIdent(sort.column)} ${direction}, "id" ${direction} ` +
        `limit $${params.length + 1}::int8 offset $${params.length + 2}::int8`,
      ...params,
      page.limit + 1,
      page.offset,
    ),
    count ? client.$queryRawUnsafe<{ total: number }[]>(`select count(*)::int4 as total from ${table.from}${where}`, ...params) : undefined,
  ]);
  return {
    rows: rows.slice(0, page.limit),
    hasMore: rows.length > page.limit,
    ...(counted ? { total: Number(counted[0]?.total ?? 0) } : {}),
  };
}
