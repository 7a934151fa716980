import { z } from 'zod';
import { defineMessages, issueKey } from './i18n.js';

/*
 * Filter operators in PostgREST's syntax (https://docs.postgrest.org, "Horizontal Filtering"),
 * for every list: `field=op.value`, the parameter repeated to AND conditions on one field
 * (`?price=gte.10&price=lt.20`), `not.` before an operator to negate it, and a bare value
 * meaning `eq` (the lists' equality filters predate the operators). This module parses a
 * parameter into conditions; `db/filter-sql.ts` turns conditions into SQL with bound values.
 *
 * Where we differ from PostgREST, on purpose:
 *  - `*` is the only wildcard of `like`/`ilike`: `%`, `_` and `\` match themselves (PostgREST
 *    passes them to LIKE, so `like.100%` or `like.a_b` would match more than they say).
 *  - A value an operator does not fit (`gt` on a boolean, `like` on a number) or that the
 *    field could not hold is a 400 naming the field, checked before any SQL is run.
 *  - On a free-text field a value whose prefix is no operator is a bare value
 *    (`?email=john.doe@example.com`); a text value that does begin with `<operator>.` is
 *    matched literally as `eq.<value>`.
 */

export const FILTER_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'in', 'is'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/** A parsed value: what the field's own schema made of the text. */
export type FilterValue = string | number | boolean | Date;

/** One condition on one field; several on a field are ANDed. */
export type FilterCondition =
  | { operator: 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte'; value: FilterValue; negated: boolean }
  /** `value` is the pattern as given, `*` its wildcard (see `likePattern`). */
  | { operator: 'like' | 'ilike'; value: string; negated: boolean }
  | { operator: 'in'; value: FilterValue[]; negated: boolean }
  | { operator: 'is'; value: null | boolean; negated: boolean };

/** The filters of a list query, by field: each given field with its conditions. */
export type ListFilters = Record<string, readonly FilterCondition[]>;

/**
 * What a field's values are, which decides the operators it takes:
 * - `text`: free text; every operator, `like`/`ilike` included;
 * - `ordered`: numbers and instants; comparisons, `in`, `is.null`;
 * - `exact`: enums and ids; equality, `in`, `is.null`;
 * - `boolean`: `eq`, `neq`, `is.null|true|false`;
 * - `member`: an array column holding the value (`roles=eq.admin`: holds admin; `in`: holds any).
 */
export type FilterKind = 'text' | 'ordered' | 'exact' | 'boolean' | 'member';

const OPERATORS_BY_KIND: Record<FilterKind, readonly FilterOperator[]> = {
  text: FILTER_OPERATORS,
  ordered: ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'is'],
  exact: ['eq', 'neq', 'in', 'is'],
  boolean: ['eq', 'neq', 'is'],
  member: ['eq', 'neq', 'in'],
};

/** Conditions on one field: enough for any range and a few exclusions; more is abuse, not a query. */
export const MAX_FILTER_CONDITIONS = 10;
/** Values in one `in` list: each is a bound parameter, and Postgres takes at most 65 535 per statement. */
export const MAX_IN_VALUES = 100;

defineMessages({
  en: {
    'filter.unknownOperator': 'Unknown operator "{operator}": write op.value with op one of {operators}, e.g. {example}.',
    'filter.operatorNotAllowed': 'The operator "{operator}" does not apply to this field; use one of {operators}, e.g. {example}.',
    'filter.isNull': 'After "is." write null.',
    'filter.isNullOrBoolean': 'After "is." write null, true or false.',
    'filter.emptyList': 'The list after "in." is empty; give at least one value, e.g. in.(a,b).',
    'filter.malformedList': 'Write a list as in.(a,b), in double quotes a value that holds a comma, a parenthesis or a quote: in.("a,b",c).',
    'filter.tooManyValues': 'At most {limit} values in one list.',
    'filter.tooManyConditions': 'At most {limit} conditions on one field.',
    'filter.notANumber': 'Must be a number, such as 10 or 9.99.',
    'filter.notAnInteger': 'Must be a whole number, such as 10.',
    'filter.notABoolean': 'Must be true or false.',
  },
  'pt-BR': {
    'filter.unknownOperator': 'Operador desconhecido "{operator}": escreva op.valor com op entre {operators}, por exemplo {example}.',
    'filter.operatorNotAllowed': 'O operador "{operator}" não se aplica a este campo; use um entre {operators}, por exemplo {example}.',
    'filter.isNull': 'Depois de "is." escreva null.',
    'filter.isNullOrBoolean': 'Depois de "is." escreva null, true ou false.',
    'filter.emptyList': 'A lista depois de "in." está vazia; informe ao menos um valor, por exemplo in.(a,b).',
    'filter.malformedList': 'Escreva a lista como in.(a,b), entre aspas duplas o valor que contém vírgula, parêntese ou aspas: in.("a,b",c).',
    'filter.tooManyValues': 'No máximo {limit} valores em uma lista.',
    'filter.tooManyConditions': 'No máximo {limit} condições em um campo.',
    'filter.notANumber': 'Deve ser um número, como 10 ou 9.99.',
    'filter.notAnInteger': 'Deve ser um número inteiro, como 10.',
    'filter.notABoolean': 'Deve ser true ou false.',
  },
  es: {
    'filter.unknownOperator': 'Operador desconocido "{operator}": escriba op.valor con op entre {operators}, por ejemplo {example}.',
    'filter.operatorNotAllowed': 'El operador "{operator}" no se aplica a este campo; use uno de {operators}, por ejemplo {example}.',
    'filter.isNull': 'Después de "is." escriba null.',
    'filter.isNullOrBoolean': 'Después de "is." escriba null, true o false.',
    'filter.emptyList': 'La lista después de "in." está vacía; indique al menos un valor, por ejemplo in.(a,b).',
    'filter.malformedList': 'Escriba la lista como in.(a,b), entre comillas dobles el valor que contenga una coma, un paréntesis o comillas: in.("a,b",c).',
    'filter.tooManyValues': 'Como máximo {limit} valores en una lista.',
    'filter.tooManyConditions': 'Como máximo {limit} condiciones en un campo.',
    'filter.notANumber': 'Debe ser un número, como 10 o 9.99.',
    'filter.notAnInteger': 'Debe ser un número entero, como 10.',
    'filter.notABoolean': 'Debe ser true o false.',
  },
  fr: {
    'filter.unknownOperator': 'Opérateur inconnu « {operator} » : écrivez op.valeur avec op parmi {operators}, par exemple {example}.',
    'filter.operatorNotAllowed': "L'opérateur « {operator} » ne s'applique pas à ce champ ; utilisez l'un de {operators}, par exemple {example}.",
    'filter.isNull': 'Après « is. » écrivez null.',
    'filter.isNullOrBoolean': 'Après « is. » écrivez null, true ou false.',
    'filter.emptyList': 'La liste après « in. » est vide ; donnez au moins une valeur, par exemple in.(a,b).',
    'filter.malformedList':
      'Écrivez la liste sous la forme in.(a,b), entre guillemets doubles une valeur qui contient une virgule, une parenthèse ou un guillemet : in.("a,b",c).',
    'filter.tooManyValues': 'Au plus {limit} valeurs dans une liste.',
    'filter.tooManyConditions': 'Au plus {limit} conditions sur un champ.',
    'filter.notANumber': 'Doit être un nombre, comme 10 ou 9.99.',
    'filter.notAnInteger': 'Doit être un nombre entier, comme 10.',
    'filter.notABoolean': 'Doit être true ou false.',
  },
  de: {
    'filter.unknownOperator': 'Unbekannter Operator „{operator}“: schreiben Sie op.wert mit op aus {operators}, z. B. {example}.',
    'filter.operatorNotAllowed': 'Der Operator „{operator}“ passt nicht zu diesem Feld; verwenden Sie einen aus {operators}, z. B. {example}.',
    'filter.isNull': 'Nach „is.“ null schreiben.',
    'filter.isNullOrBoolean': 'Nach „is.“ null, true oder false schreiben.',
    'filter.emptyList': 'Die Liste nach „in.“ ist leer; geben Sie mindestens einen Wert an, z. B. in.(a,b).',
    'filter.malformedList':
      'Schreiben Sie die Liste als in.(a,b), einen Wert mit Komma, Klammer oder Anführungszeichen in doppelten Anführungszeichen: in.("a,b",c).',
    'filter.tooManyValues': 'Höchstens {limit} Werte in einer Liste.',
    'filter.tooManyConditions': 'Höchstens {limit} Bedingungen für ein Feld.',
    'filter.notANumber': 'Muss eine Zahl sein, etwa 10 oder 9.99.',
    'filter.notAnInteger': 'Muss eine ganze Zahl sein, etwa 10.',
    'filter.notABoolean': 'Muss true oder false sein.',
  },
});

/** A string matching `pattern`, or the custom issue `key` (so its message is ours, in every locale). */
const textMatching = (pattern: RegExp, key: string) => z.string().refine((text) => pattern.test(text), { ...issueKey(key), abort: true });

/** `true`/`false` as a filter value. */
export const booleanFilterValue = textMatching(/^(true|false)$/, 'filter.notABoolean').transform((value) => value === 'true');

/** An integer filter value, then checked by the field's own schema (its bounds). */
export const integerFilterValue = (schema: z.ZodType<number, number>) =>
  textMatching(/^-?\d{1,10}$/, 'filter.notAnInteger').transform(Number).pipe(schema);

/** A decimal filter value, then checked by the field's own schema (its scale and bounds). */
export const decimalFilterValue = (schema: z.ZodType<number, number>) =>
  textMatching(/^-?\d{1,30}(\.\d{1,30})?$/, 'filter.notANumber').transform(Number).pipe(schema);

/** An ISO 8601 instant as a filter value. */
export const instantFilterValue = z.iso.datetime({ offset: true }).transform((value) => new Date(value));

export interface FilterFieldOptions {
  /** The field's name, in the parameter's description. */
  name: string;
  kind: FilterKind;
  /** Parses one value as the field holds it (a bare value, an operand, a list item). */
  value: z.ZodType<FilterValue, string>;
  /** A value the field holds, for the documented example; found among common ones when omitted. */
  example?: string;
}

const EXAMPLE_CANDIDATES = ['10', '1', '0', 'true', '2025-01-01T00:00:00Z', '00000000-0000-4000-8000-000000000000', 'example'];

/** The documented example of a field's filter: a valid use of the operator that suits its kind best. */
function exampleOf(options: FilterFieldOptions): string {
  const sample = options.example ?? EXAMPLE_CANDIDATES.find((candidate) => options.value.safeParse(candidate).success);
  switch (options.kind) {
    case 'text':
      return 'ilike.*a*';
    case 'boolean':
      return 'is.true';
    case 'ordered':
      return sample === undefined ? 'not.is.null' : `gte.${sample}`;
    case 'exact':
    case 'member':
      return sample === undefined ? 'not.is.null' : `in.(${sample})`;
  }
}

type Split = { operator: FilterOperator; negated: boolean; operand: string } | { unknown: string };

const OPERATOR_PREFIX = /^(not\.)?([a-z]+)\.([\s\S]*)$/;
const isOperator = (word: string): word is FilterOperator => (FILTER_OPERATORS as readonly string[]).includes(word);

/** Reads `[not.]op.operand`; a value with no operator prefix is a bare `eq`, unless it looks like a mistyped operator. */
function splitOperator(raw: string, kind: FilterKind): Split {
  const match = OPERATOR_PREFIX.exec(raw);
  if (match && isOperator(match[2]!)) return { operator: match[2], negated: match[1] !== undefined, operand: match[3]! };
  const freeText = kind === 'text' || kind === 'member';
  const word = /^(?:not\.)?([A-Za-z]+)\./.exec(raw);
  if (freeText || !word) return { operator: 'eq', negated: false, operand: raw };
  return { unknown: word[1]! };
}

/**
 * Splits the inside of `in.(...)`: commas separate values; a value in double quotes may hold
 * commas, parentheses and, escaped by a backslash, quotes and backslashes. Undefined when malformed.
 */
export function splitInList(operand: string): string[] | undefined {
  if (!operand.startsWith('(') || !operand.endsWith(')') || operand.length < 2) return undefined;
  const inner = operand.slice(1, -1);
  if (inner === '') return [];
  const items: string[] = [];
  let index = 0;
  while (index <= inner.length) {
    if (inner[index] === '"') {
      let item = '';
      index += 1;
      while (index < inner.length && inner[index] !== '"') {
        if (inner[index] === '\\' && index + 1 < inner.length) index += 1;
        item += inner[index];
        index += 1;
      }
      if (index >= inner.length) return undefined; // no closing quote
      index += 1;
      if (index < inner.length && inner[index] !== ',') return undefined; // text after the closing quote
      items.push(item);
    } else {
      const comma = inner.indexOf(',', index);
      const end = comma < 0 ? inner.length : comma;
      const item = inner.slice(index, end);
      if (/["()]/.test(item)) return undefined; // reserved characters must be quoted
      items.push(item);
      index = end;
    }
    index += 1; // past the comma (or past the end)
  }
  return items;
}

type Issue = Parameters<z.core.$RefinementCtx['addIssue']>[0];

/** Parses one parameter value into a condition, or reports why it cannot. */
function parseCondition(raw: string, options: FilterFieldOptions, example: string): FilterCondition | Issue[] {
  const allowed = OPERATORS_BY_KIND[options.kind];
  const listed = allowed.join(', ');
  const custom = (key: string, values?: Record<string, string | number>): Issue[] => [
    { code: 'custom', input: raw, message: key, ...issueKey(key, values) },
  ];
  const parseValue = (text: string): FilterValue | Issue[] => {
    const result = options.value.safeParse(text, { reportInput: true });
    return result.success ? result.data : (result.error.issues as Issue[]);
  };

  const split = splitOperator(raw, options.kind);
  if ('unknown' in split) return custom('filter.unknownOperator', { operator: split.unknown, operators: listed, example });
  const { operator, negated, operand } = split;
  if (!allowed.includes(operator)) return custom('filter.operatorNotAllowed', { operator, operators: listed, example });

  switch (operator) {
    case 'like':
    case 'ilike':
      return { operator, value: operand, negated };
    case 'is': {
      if (operand === 'null') return { operator, value: null, negated };
      if (options.kind === 'boolean' && (operand === 'true' || operand === 'false')) return { operator, value: operand === 'true', negated };
      return custom(options.kind === 'boolean' ? 'filter.isNullOrBoolean' : 'filter.isNull');
    }
    case 'in': {
      const items = splitInList(operand);
      if (items === undefined) return custom('filter.malformedList');
      if (items.length === 0) return custom('filter.emptyList');
      if (items.length > MAX_IN_VALUES) return custom('filter.tooManyValues', { limit: MAX_IN_VALUES });
      const values: FilterValue[] = [];
      for (const item of items) {
        const value = parseValue(item);
        if (Array.isArray(value)) return value;
        values.push(value);
      }
      return { operator, value: values, negated };
    }
    default: {
      const value = parseValue(operand);
      return Array.isArray(value) ? value : { operator, value, negated };
    }
  }
}

/**
 * The query parameter of a filterable field: one value or the parameter repeated, each
 * `[not.]op.value` or a bare value (eq), parsed into the field's conditions. Every problem is
 * an issue on the field, worded in the caller's language. Documented with the syntax, the
 * field's operators and a valid example.
 */
export function filterParam(options: FilterFieldOptions) {
  const param = filterParamSchema(options);
  FILTER_VALUES.set(param, options.value);
  return param;
}

/** The value schema of each filter parameter `filterParam` made (a list's cursor parses its sort value with it). */
const FILTER_VALUES = new WeakMap<z.ZodType, z.ZodType<FilterValue, string>>();

/** How the field of a filter parameter reads one value, when `filterParam` made it. */
export const filterValueOf = (param: unknown): z.ZodType<FilterValue, string> | undefined =>
  param instanceof z.ZodType ? FILTER_VALUES.get(param) : undefined;

function filterParamSchema(options: FilterFieldOptions) {
  const example = exampleOf(options);
  const operators = OPERATORS_BY_KIND[options.kind];
  const description =
    `Filter on ${options.name}: \`op.value\` with op one of ${operators.map((op) => `\`${op}\``).join(', ')}` +
    (operators.includes('like') ? ' (`*` is the wildcard of like/ilike)' : '') +
    '; `in.(a,b)` (double-quote a value holding a comma), `not.` before op negates it; a bare value means `eq`. ' +
    `Repeat the parameter to AND conditions. Example: \`${options.name}=${example}\``;
  return z
    .union([z.string(), z.array(z.string())])
    // On the input side: OpenAPI documents what a caller sends, and drops output examples.
    .meta({ description, examples: [example] })
    .transform((input, ctx): FilterCondition[] => {
      const given = [input].flat();
      if (given.length > MAX_FILTER_CONDITIONS) {
        ctx.addIssue({ code: 'custom', input, message: 'filter.tooManyConditions', ...issueKey('filter.tooManyConditions', { limit: MAX_FILTER_CONDITIONS }) });
        return z.NEVER;
      }
      const conditions: FilterCondition[] = [];
      for (const raw of given) {
        const parsed = parseCondition(raw, options, example);
        if (Array.isArray(parsed)) {
          for (const issue of parsed) ctx.addIssue(issue);
          return z.NEVER;
        }
        conditions.push(parsed);
      }
      return conditions;
    })
    .optional();
}
