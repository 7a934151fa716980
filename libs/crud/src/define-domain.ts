import {
  type ApiTag,
  booleanFilterValue,
  filterParam,
  instantFilterValue,
  idempotentHeadersSchema,
  listHeadersSchema,
  listQuerySchema,
  type PagingQuery,
} from '@app/platform';
import { z } from 'zod';
import { describeColumn, exampleOf, filterSchema, type Column } from './columns.js';

/** What a domain is declared with: one call per domain, in one definition file. */
export interface DomainSpec<C extends Record<string, z.ZodType>> {
  /** Singular and lower-case: the table name, the tag (capitalized) and the event subjects `crud.<name>.*`. */
  name: string;
  /** The collection's path segment; `<name>s` by default. */
  plural?: string;
  /** Where the routes live; `/api/v1/<plural>` by default. Registration may override it. */
  prefix?: string;
  /** The record's own fields as zod schemas; `.optional()` makes a column nullable and not required. */
  columns: C;
  /** Columns under a unique index: a create or update that would repeat a value is a 422. */
  unique?: readonly (keyof C & string)[];
  /**
   * What the migration indexes, each followed by id: a column, so filtering or sorting on it
   * reads one page; or a list of fields, for a list filtered by equality on the first ones and
   * sorted by the last (`['category', 'price']` serves `?category=Fruits&sort=price` and
   * `sort=-price`, by cursor at any depth). No direction: a list's order is one direction for
   * its field and id alike, which an index serves read forwards or backwards.
   */
  indexes?: readonly (IndexedField<C> | readonly [IndexedField<C>, ...IndexedField<C>[]])[];
}

/** A field an index may hold: a column, or a field every record has (id is the index's last field already). */
type IndexedField<C> = (keyof C & string) | 'activated' | 'createdAt' | 'updatedAt';

/** The fields every generic record has besides its columns. */
export const COMMON_FIELDS = ['id', 'activated', 'createdAt', 'updatedAt'] as const;
/** Query parameters of a list; a column cannot take these names. */
const PAGING_PARAMS: readonly string[] = ['limit', 'offset', 'sort', 'cursor'] satisfies (keyof PagingQuery)[];

/** Identifiers reach SQL only from definitions, and only if they match these, so quoting is never asked to do more. */
const TABLE_NAME = /^[a-z][a-z0-9_]{0,62}$/;
const COLUMN_NAME = /^[a-z][a-zA-Z0-9]{0,62}$/;
const PATH_SEGMENT = /^[a-z][a-z0-9-]{0,62}$/;

export interface DomainSchemas {
  /** A stored record, as every read answers it (in an array). */
  record: z.ZodType;
  records: z.ZodType;
  /** Body of POST: every column with its bounds; optional columns may be omitted or null. */
  create: z.ZodType;
  /** Body of PUT: the create schema with every field optional. */
  update: z.ZodType;
  /** Path parameters of the routes on one record. */
  params: z.ZodObject<{ id: z.ZodUUID }>;
  /** Query of a list: paging, sort and a filter (PostgREST operators) per field but id. */
  query: z.ZodType<ListQuery>;
  headers: z.ZodType;
  listHeaders: z.ZodType;
  /** Headers of POST: Idempotency-Key besides the others. */
  createHeaders: z.ZodType;
}

/** A parsed list query: paging and sort, plus the conditions of each filtered field. */
export interface ListQuery extends PagingQuery {
  [filter: string]: unknown;
}

/** A defined domain: everything the routes, service and repository need, derived once. */
export interface Domain {
  name: string;
  plural: string;
  prefix: string;
  /** OpenAPI tag: the capitalized name. */
  tag: string;
  /** The table, in the owning service's schema: the singular name. */
  table: string;
  columns: readonly Column[];
  /** Every field of a record, in answer order: id, the columns, activated, createdAt, updatedAt. */
  fields: readonly string[];
  unique: readonly string[];
  /** The fields of each declared index, in order (id follows them in the index). */
  indexes: readonly (readonly string[])[];
  schemas: DomainSchemas;
}

/** The OpenAPI tag grouping a domain's routes, described. */
export const domainTag = (domain: Domain): ApiTag => ({
  name: domain.tag,
  description: `Generic ${domain.name} records under ${domain.prefix}: create, read, update, delete, and list with paging, sorting and filters`,
});

const capitalize = (name: string) => name.charAt(0).toUpperCase() + name.slice(1);

/** Marks what defineDomain returned, so a module's exports can be told apart (`loadDomains`). */
const DEFINED = Symbol.for('@app/crud/domain');

/** Whether `value` is a domain that defineDomain made. */
export const isDomain = (value: unknown): value is Domain => typeof value === 'object' && value !== null && DEFINED in value;

/**
 * Declares a generic CRUD domain: pure data, derived once. `createDomainPlugin(domain)` serves it;
 * its table comes from a migration (`domainTableSql` writes it), which `checkDomainTables` holds
 * to this declaration at every start.
 */
export function defineDomain<const C extends Record<string, z.ZodType>>(spec: DomainSpec<C>): Domain {
  if (!TABLE_NAME.test(spec.name)) throw new Error(`domain name "${spec.name}" must be lower-case letters, digits or _`);
  const plural = spec.plural ?? `${spec.name}s`;
  if (!PATH_SEGMENT.test(plural)) throw new Error(`plural "${plural}" must be a lower-case path segment`);
  const columns = Object.entries(spec.columns).map(([name, schema]) => {
    if (!COLUMN_NAME.test(name)) throw new Error(`column "${name}" of ${spec.name} must be camelCase letters and digits`);
    if ([...COMMON_FIELDS, ...PAGING_PARAMS].includes(name)) throw new Error(`column "${name}" of ${spec.name} is reserved`);
    return describeColumn(name, schema);
  });
  const names = new Set(columns.map((column) => column.name));
  for (const name of spec.unique ?? []) {
    if (!names.has(name)) throw new Error(`"${name}" is listed in unique of ${spec.name} but is not a column`);
  }
  const indexes = (spec.indexes ?? []).map((index): string[] => [index].flat());
  for (const fields of indexes) {
    for (const name of fields) {
      if (!names.has(name) && !['activated', 'createdAt', 'updatedAt'].includes(name)) {
        throw new Error(`"${name}" is listed in indexes of ${spec.name} but is not a column, activated, createdAt or updatedAt`);
      }
    }
    if (new Set(fields).size !== fields.length) throw new Error(`an index of ${spec.name} lists a field twice: ${fields.join(', ')}`);
  }
  const tag = capitalize(spec.name);
  const fields: [string, ...string[]] = ['id', ...columns.map((column) => column.name), 'activated', 'createdAt', 'updatedAt'];
  const domain: Domain = {
    name: spec.name,
    plural,
    prefix: spec.prefix ?? `/api/v1/${plural}`,
    tag,
    table: spec.name,
    columns,
    fields,
    unique: [...(spec.unique ?? [])],
    indexes,
    schemas: buildSchemas(spec.name, tag, columns, fields),
  };
  Object.defineProperty(domain, DEFINED, { value: true });
  return domain;
}

/** The id and instant of the example record in the docs. */
const EXAMPLE_ID = '3fa85f64-5717-4562-b3fc-2c963f66afa6';
const EXAMPLE_INSTANT = '2025-01-01T12:00:00.000Z';

/** `{ examples: [value] }` for a schema's metadata when `schema` accepts `value`; nothing otherwise. */
const examplesFor = (schema: z.ZodType, value: Record<string, unknown> | undefined) =>
  value !== undefined && schema.safeParse(value).success ? { examples: [value] } : {};

function buildSchemas(name: string, tag: string, columns: Column[], fields: [string, ...string[]]): DomainSchemas {
  const shape = (fn: (column: Column) => z.ZodType) => Object.fromEntries(columns.map((column) => [column.name, fn(column)]));
  const timestamp = z.iso.datetime();
  const recordShape = z.object({
    id: z.uuid(),
    ...shape((column) => (column.required ? column.value : column.value.nullable())),
    activated: z.boolean(),
    createdAt: timestamp,
    updatedAt: timestamp,
  });
  const writable = shape((column) => (column.required ? column.value : column.value.nullable().optional()));
  const createShape = z.strictObject({ ...writable, activated: z.boolean().optional().describe('true when omitted') });
  const updateShape = z.strictObject({
    ...shape((column) => (column.required ? column.value.optional() : column.value.nullable().optional())),
    activated: z.boolean().optional(),
  });
  // Examples fitted to the columns' bounds (exampleOf), each kept only if its schema accepts it.
  const values = Object.fromEntries(columns.map((column) => [column.name, exampleOf(column)]).filter(([, value]) => value !== undefined));
  const example = columns.every((column) => !column.required || column.name in values) ? values : undefined;
  const record = recordShape.meta({
    id: tag,
    description: `A ${name} record`,
    ...examplesFor(recordShape, example && { id: EXAMPLE_ID, ...example, activated: true, createdAt: EXAMPLE_INSTANT, updatedAt: EXAMPLE_INSTANT }),
  });
  const create = createShape.meta({
    id: `${tag}Create`,
    description: `A new ${name}; id, createdAt and updatedAt are set by the service`,
    ...examplesFor(createShape, example),
  });
  const update = updateShape.meta({
    id: `${tag}Update`,
    description: `The fields of a ${name} to change; the others keep their values`,
    ...examplesFor(updateShape, example),
  });

  const query = listQuerySchema(fields, {
    ...shape(filterSchema),
    activated: filterParam({ name: 'activated', kind: 'boolean', value: booleanFilterValue }),
    createdAt: filterParam({ name: 'createdAt', kind: 'ordered', value: instantFilterValue }),
    updatedAt: filterParam({ name: 'updatedAt', kind: 'ordered', value: instantFilterValue }),
  });

  const acceptLanguage = { 'accept-language': z.string().optional().describe('Language of error messages: en, pt-BR, es, fr or de') };
  const headers = z.looseObject(acceptLanguage);
  const listHeaders = listHeadersSchema.extend(acceptLanguage);
  const createHeaders = idempotentHeadersSchema.extend(acceptLanguage);
  return {
    record,
    records: z.array(record),
    create,
    update,
    params: z.object({ id: z.uuid().describe(`The ${name}'s id`) }),
    query,
    headers,
    listHeaders,
    createHeaders,
  };
}
