import { booleanFilterValue, decimalFilterValue, filterParam, integerFilterValue, issueKey } from '@app/platform';
import { z } from 'zod';
import './errors.js';

/** How a column is stored and bound in SQL; derived from its zod schema. */
export type ColumnKind = 'text' | 'enum' | 'integer' | 'decimal' | 'boolean';

/** The Postgres type each kind's parameters are cast to, so a value is never bound by guess. */
export const SQL_TYPES: Record<ColumnKind, string> = {
  text: 'text',
  enum: 'text',
  integer: 'integer',
  decimal: 'numeric',
  boolean: 'boolean',
};

export interface Column {
  name: string;
  kind: ColumnKind;
  /** What a stored, non-null value satisfies: the declared schema plus the storage bounds. */
  value: z.ZodType;
  /** Required on create and never null; optional columns are nullable. */
  required: boolean;
}

/** Postgres `integer` bounds: a larger value must be a 400, never an out-of-range database error. */
const INT4_MIN = -2_147_483_648;
const INT4_MAX = 2_147_483_647;

/**
 * A fixed-point number column, `decimal(precision, scale)` in SQL: at most `scale` decimals and
 * `precision - scale` integer digits, so every accepted value fits the column exactly.
 * Chain further bounds (`decimal({ precision: 10, scale: 2 }).min(0)`).
 */
export function decimal(options: { precision: number; scale: number }) {
  const step = 10 ** -options.scale;
  const largest = Number((10 ** (options.precision - options.scale) - step).toFixed(options.scale));
  return z.number().multipleOf(step).min(-largest).max(largest);
}

/** Postgres text cannot hold U+0000; rejecting it here keeps it a 400 instead of a database error. */
const withoutNul = (schema: z.ZodString) =>
  schema.refine((value) => !value.includes('\u0000'), issueKey('crud.nulCharacter'));

/**
 * Reads a column's zod schema: its kind, whether it is required, and its value schema with the
 * storage bounds the declared schema may have left out (Postgres integer range, no NUL in text).
 */
export function describeColumn(name: string, declared: z.ZodType): Column {
  let schema = declared;
  let required = true;
  while (schema instanceof z.ZodOptional || schema instanceof z.ZodNullable) {
    required = false;
    schema = schema.unwrap() as z.ZodType;
  }
  if (schema instanceof z.ZodString) return { name, kind: 'text', value: withoutNul(schema), required };
  if (schema instanceof z.ZodEnum) return { name, kind: 'enum', value: schema, required };
  if (schema instanceof z.ZodBoolean) return { name, kind: 'boolean', value: schema, required };
  if (schema instanceof z.ZodNumber) {
    if (schema.isInt) return { name, kind: 'integer', value: schema.min(INT4_MIN).max(INT4_MAX), required };
    return { name, kind: 'decimal', value: schema, required };
  }
  throw new Error(
    `column "${name}": unsupported schema type "${schema.def.type}"; use z.string(), z.enum(), z.boolean(), ` +
      'z.number().int() or decimal(), optionally .optional()',
  );
}

/**
 * The list filter of a column (PostgREST operators, see `filterParam`): each value is parsed into
 * the column's type and then checked by the column's own schema, so `?stock=gt.abc` or
 * `?perishable=maybe` is a 400 and no value reaches SQL that the column could not hold.
 */
export function filterSchema(column: Column) {
  const name = column.name;
  switch (column.kind) {
    case 'text':
      return filterParam({ name, kind: 'text', value: column.value as z.ZodType<string, string> });
    case 'enum': {
      const [first = '', second] = (column.value as z.ZodEnum).options.map(String);
      return filterParam({ name, kind: 'exact', value: column.value as z.ZodType<string, string>, example: second ? `${first},${second}` : first });
    }
    case 'boolean':
      return filterParam({ name, kind: 'boolean', value: booleanFilterValue });
    case 'integer':
      return filterParam({ name, kind: 'ordered', value: integerFilterValue(column.value as z.ZodType<number, number>) });
    case 'decimal':
      return filterParam({ name, kind: 'ordered', value: decimalFilterValue(column.value as z.ZodType<number, number>) });
  }
}

/** What an example of each kind starts from before it is fitted into a column's bounds. */
const PREFERRED_NUMBER = { integer: 10, decimal: 9.99 } as const;

/** `value` moved into [minimum, maximum] and onto a multiple of `step`, written with the step's decimals. */
function fitNumber(value: number, bounds: { minimum?: number; maximum?: number; multipleOf?: number }): number {
  const step = bounds.multipleOf;
  const decimals = step ? Math.max(0, -Math.floor(Math.log10(step))) : 0;
  const onStep = (n: number, round: (x: number) => number) => (step ? Number((round(n / step) * step).toFixed(decimals)) : n);
  let fitted = onStep(value, Math.round);
  if (bounds.minimum !== undefined && fitted < bounds.minimum) fitted = onStep(bounds.minimum, Math.ceil);
  if (bounds.maximum !== undefined && fitted > bounds.maximum) fitted = onStep(bounds.maximum, Math.floor);
  return fitted;
}

/**
 * A value the column accepts, for the OpenAPI examples (the docs UI pre-fills them): fitted
 * into the bounds the column's zod schema declares, then checked by that schema itself, so the
 * document never offers a value the API would refuse. Undefined when no candidate fits (a
 * pattern the candidates miss): better no example than a wrong one.
 */
export function exampleOf(column: Column): unknown {
  const bounds = z.toJSONSchema(column.value, { unrepresentable: 'any' }) as {
    minimum?: number;
    maximum?: number;
    multipleOf?: number;
    minLength?: number;
    maxLength?: number;
  };
  let candidates: unknown[];
  switch (column.kind) {
    case 'text': {
      const words = column.name.replace(/([A-Z])/g, ' $1').toLowerCase();
      const fit = (text: string) => text.padEnd(bounds.minLength ?? 0, 's').slice(0, bounds.maxLength);
      candidates = [fit(`Example ${words}`), fit(`example-${words.replace(/ /g, '-')}`), fit('x')];
      break;
    }
    case 'enum':
      candidates = (column.value as z.ZodEnum).options.slice(0, 1);
      break;
    case 'boolean':
      candidates = [true];
      break;
    case 'integer':
    case 'decimal':
      candidates = [fitNumber(PREFERRED_NUMBER[column.kind], bounds)];
      break;
  }
  return candidates.find((value) => column.value.safeParse(value).success);
}
