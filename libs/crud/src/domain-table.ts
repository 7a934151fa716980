import { quoteIdent, type SqlSession } from '@app/platform';
import { z } from 'zod';
import type { Column } from './columns.js';
import type { Domain } from './define-domain.js';

/*
 * A domain's table, derived from its declaration: the SQL that creates it (for the migration
 * that adds a domain), and the check that an existing table can hold every record the
 * declaration accepts. The migrations stay the one way tables change (a reviewed, immutable
 * history, and only a person can say how existing rows move when a column does); this check
 * is what keeps them and the declaration from drifting apart, at every start.
 */

/** A column as information_schema describes it. */
interface TableColumn {
  column_name: string;
  data_type: string;
  character_maximum_length: number | null;
  numeric_precision: number | null;
  numeric_scale: number | null;
  is_nullable: 'YES' | 'NO';
  column_default: string | null;
}

/** What a field of the declaration needs of its column. */
interface FieldColumn {
  name: string;
  /** The SQL type a migration gives it: the narrowest that holds every accepted value. */
  type: string;
  nullable: boolean;
  /** SQL default; the repository inserts without these fields. */
  default?: string;
  /** Why `actual` cannot hold every value the declaration accepts; undefined when it can. */
  misfit(actual: TableColumn): string | undefined;
}

const BOUNDS = (column: Column) =>
  z.toJSONSchema(column.value, { unrepresentable: 'any' }) as { maxLength?: number; minimum?: number; maximum?: number; multipleOf?: number };

/** A text column holds strings up to `maxLength` (any length when undefined). */
function textColumn(name: string, nullable: boolean, maxLength: number | undefined): FieldColumn {
  return {
    name,
    nullable,
    type: maxLength === undefined ? 'text' : `varchar(${maxLength})`,
    misfit: (actual) => {
      if (actual.data_type !== 'text' && actual.data_type !== 'character varying') return `is ${actual.data_type}, not text`;
      const limit = actual.character_maximum_length;
      if (limit === null) return undefined;
      if (maxLength === undefined) return `holds at most ${limit} characters, and the declaration sets no maximum`;
      return maxLength > limit ? `holds at most ${limit} characters, and the declaration accepts ${maxLength}` : undefined;
    },
  };
}

/** A numeric column holds the declared decimals: `scale` digits after the point, `integerDigits` before it. */
function decimalColumn(name: string, nullable: boolean, column: Column): FieldColumn {
  const bounds = BOUNDS(column);
  const scale = bounds.multipleOf === undefined ? undefined : Math.max(0, -Math.floor(Math.log10(bounds.multipleOf) + 1e-9));
  const largest = bounds.minimum === undefined || bounds.maximum === undefined ? undefined : Math.max(Math.abs(bounds.minimum), Math.abs(bounds.maximum));
  const integerDigits = largest === undefined ? undefined : largest < 1 ? 0 : String(Math.floor(largest)).length;
  const bounded = scale !== undefined && integerDigits !== undefined;
  return {
    name,
    nullable,
    type: bounded ? `numeric(${integerDigits + scale},${scale})` : 'numeric',
    misfit: (actual) => {
      if (actual.data_type !== 'numeric') return `is ${actual.data_type}, not numeric`;
      if (actual.numeric_precision === null) return undefined;
      const actualScale = actual.numeric_scale ?? 0;
      const held = `numeric(${actual.numeric_precision},${actualScale})`;
      if (!bounded) return `is ${held}, and the declaration accepts any number (declare decimal({ precision, scale }))`;
      if (scale > actualScale || integerDigits > actual.numeric_precision - actualScale) return `is ${held}, and the declaration accepts numeric(${integerDigits + scale},${scale})`;
      return undefined;
    },
  };
}

const exactly = (name: string, type: string, dataType: string, nullable: boolean, sqlDefault?: string): FieldColumn => ({
  name,
  type,
  nullable,
  ...(sqlDefault === undefined ? {} : { default: sqlDefault }),
  misfit: (actual) => (actual.data_type === dataType ? undefined : `is ${actual.data_type}, not ${dataType}`),
});

function columnOf(column: Column): FieldColumn {
  const nullable = !column.required;
  switch (column.kind) {
    case 'text':
      return textColumn(column.name, nullable, BOUNDS(column).maxLength);
    case 'enum':
      return textColumn(column.name, nullable, Math.max(...(column.value as z.ZodEnum).options.map((option) => String(option).length)));
    case 'integer':
      return exactly(column.name, 'integer', 'integer', nullable);
    case 'boolean':
      return exactly(column.name, 'boolean', 'boolean', nullable);
    case 'decimal':
      return decimalColumn(column.name, nullable, column);
  }
}

/** Every field's column, in the record's order: id, the declared columns, activated, createdAt, updatedAt. */
function fieldColumns(domain: Domain): FieldColumn[] {
  const timestamp = (name: string) => exactly(name, 'timestamptz(3)', 'timestamp with time zone', false, 'current_timestamp');
  return [
    exactly('id', 'uuid', 'uuid', false, 'gen_random_uuid()'),
    ...domain.columns.map(columnOf),
    exactly('activated', 'boolean', 'boolean', false, 'true'),
    timestamp('createdAt'),
    timestamp('updatedAt'),
  ];
}

/**
 * The indexes a domain's table has besides its primary key: unique ones, and one per declared
 * index with id last (and createdAt with id, the default sort), so a page by cursor starts
 * with one probe of it and reads only its own rows.
 */
function indexesOf(domain: Domain): { name: string; columns: string[]; unique: boolean }[] {
  const listed = domain.indexes.some((fields) => fields.length === 1 && fields[0] === 'createdAt') ? domain.indexes : [...domain.indexes, ['createdAt']];
  return [
    ...domain.unique.map((column) => ({ name: `${domain.table}_${column}_key`, columns: [column], unique: true })),
    ...listed.map((fields) => ({ name: `${domain.table}_${fields.join('_')}_id_idx`, columns: [...fields, 'id'], unique: false })),
  ];
}

const tableName = (domain: Domain, schema: string) => `${quoteIdent(schema)}.${quoteIdent(domain.table)}`;
const columnSql = (column: FieldColumn) =>
  `${quoteIdent(column.name)} ${column.type}${column.nullable ? '' : ' not null'}${column.default === undefined ? '' : ` default ${column.default}`}`;
const indexSql = (table: string, index: { name: string; columns: string[]; unique: boolean }) =>
  `create ${index.unique ? 'unique ' : ''}index ${quoteIdent(index.name)} on ${table} (${index.columns.map(quoteIdent).join(', ')});`;

/** The SQL that creates a domain's table in `schema` as its declaration needs it: the migration that adds a domain. */
export function domainTableSql(domain: Domain, schema: string): string {
  const table = tableName(domain, schema);
  return [
    `create table ${table} (`,
    ...fieldColumns(domain).map((column) => `  ${columnSql(column)},`),
    `  constraint ${quoteIdent(`${domain.table}_pkey`)} primary key ("id")`,
    ');',
    ...indexesOf(domain).map((index) => indexSql(table, index)),
  ].join('\n');
}

/** A domain whose table does not match its declaration: each problem with the SQL of a migration that fixes it. */
export class DomainTableMismatchError extends Error {
  constructor(readonly problems: readonly { domain: string; problem: string; fix: string }[]) {
    super(
      "Generic domains' tables do not match their declarations (defineDomain). Add a migration to the service's " +
        'migrations folder that makes them match, or change the declaration:\n' +
        problems.map((p) => `- domain "${p.domain}": ${p.problem}\n    fix: ${p.fix.replace(/\n/g, '\n         ')}`).join('\n'),
    );
    this.name = 'DomainTableMismatchError';
  }
}

/**
 * Checks that each domain's table in `schema` can hold every record its declaration accepts:
 * each field's column (type wide enough, nullable exactly when optional, a default where the
 * repository relies on one), the unique indexes exactly as declared (a create answers 422 on
 * them), and the declared indexes. A column the declaration does not know is left alone when
 * it is nullable or has a default (a migration may add it before the code that uses it); not
 * otherwise, since every insert would fail. Throws DomainTableMismatchError listing them all.
 */
export async function checkDomainTables(session: SqlSession, schema: string, domains: readonly Domain[]): Promise<void> {
  const problems: { domain: string; problem: string; fix: string }[] = [];
  for (const domain of domains) {
    const table = tableName(domain, schema);
    const report = (problem: string, fix: string) => problems.push({ domain: domain.name, problem, fix });
    const actual = await session.query<TableColumn>(
      `select column_name, data_type, character_maximum_length, numeric_precision, numeric_scale, is_nullable, column_default
       from information_schema.columns where table_schema = $1 and table_name = $2`,
      [schema, domain.table],
    );
    if (actual.length === 0) {
      report(`table ${table} does not exist`, domainTableSql(domain, schema));
      continue;
    }
    const byName = new Map(actual.map((column) => [column.column_name, column]));
    for (const expected of fieldColumns(domain)) {
      const column = byName.get(expected.name);
      const where = `column "${expected.name}" of ${table}`;
      if (!column) {
        report(`${where} does not exist`, `alter table ${table} add column ${columnSql(expected)};`);
        continue;
      }
      const misfit = expected.misfit(column);
      if (misfit) report(`${where} ${misfit}`, `alter table ${table} alter column ${quoteIdent(expected.name)} type ${expected.type};`);
      if (expected.nullable !== (column.is_nullable === 'YES')) {
        report(
          expected.nullable ? `${where} is not null, and the declaration makes it optional` : `${where} is nullable, and the declaration requires it`,
          `alter table ${table} alter column ${quoteIdent(expected.name)} ${expected.nullable ? 'drop' : 'set'} not null;`,
        );
      }
      if (expected.default !== undefined && column.column_default === null) {
        report(`${where} has no default, and creates leave it to the database`, `alter table ${table} alter column ${quoteIdent(expected.name)} set default ${expected.default};`);
      }
    }
    const fields = new Set(domain.fields);
    for (const column of actual) {
      if (fields.has(column.column_name) || column.is_nullable === 'YES' || column.column_default !== null) continue;
      report(
        `column "${column.column_name}" of ${table} is not declared, and is not null without a default: every create would fail`,
        `declare it in defineDomain, or: alter table ${table} drop column ${quoteIdent(column.column_name)};`,
      );
    }

    const indexes = await session.query<{ name: string; columns: string[]; is_unique: boolean }>(
      `select i.relname::text as name, x.indisunique as is_unique,
              array(select a.attname::text from unnest(x.indkey) with ordinality as k(attnum, n)
                    join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.attnum order by k.n) as columns
       from pg_index x
       join pg_class t on t.oid = x.indrelid
       join pg_namespace s on s.oid = t.relnamespace
       join pg_class i on i.oid = x.indexrelid
       where s.nspname = $1 and t.relname = $2 and not x.indisprimary`,
      [schema, domain.table],
    );
    const key = (columns: readonly string[]) => columns.join(',');
    const expectedIndexes = indexesOf(domain);
    for (const expected of expectedIndexes) {
      if (indexes.some((index) => index.is_unique === expected.unique && key(index.columns) === key(expected.columns))) continue;
      report(
        expected.unique
          ? `column "${expected.columns[0]}" is declared unique, and ${table} has no unique index on it`
          : `${table} has no index on (${expected.columns.join(', ')}), which the declaration lists`,
        indexSql(table, expected),
      );
    }
    for (const index of indexes.filter((index) => index.is_unique)) {
      if (expectedIndexes.some((expected) => expected.unique && key(expected.columns) === key(index.columns))) continue;
      report(
        `${table} has a unique index ${quoteIdent(index.name)} on (${index.columns.join(', ')}), which the declaration does not list in unique`,
        `list it in unique, or: drop index ${quoteIdent(schema)}.${quoteIdent(index.name)};`,
      );
    }
  }
  if (problems.length > 0) throw new DomainTableMismatchError(problems);
}
