import fc from 'fast-check';

/**
 * fast-check arbitraries of hostile HTTP requests, generated from the platform's OpenAPI 3.1
 * document: every operation, with valid-looking values mixed with wrong types, missing and
 * extra fields, 100 KB strings, lone surrogates, NUL, numbers at and past their bounds, deep
 * nesting, bad UUIDs, odd query strings and odd content types.
 */

/** The part of a JSON Schema (OpenAPI 3.1 dialect) the generator reads. */
export interface Schema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  pattern?: string;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  schema?: Schema;
  /** The documented example (list filters show their PostgREST syntax with one). */
  example?: unknown;
}

interface OperationObject {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  security?: unknown[];
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, Schema> };
}

/** One operation of the document, its schemas resolved. */
export interface Operation {
  method: string;
  path: string;
  parameters: Parameter[];
  body?: { required: boolean; contentTypes: string[]; schema: Schema };
}

/** Who sends a request: the admin, an ordinary user, nobody, or someone with a forged token. */
export type Caller = 'admin' | 'user' | 'anonymous' | 'forged';

/** A request as the fuzzer sends it: every part raw, so the report can replay it byte for byte. */
export interface FuzzRequest {
  operation: string;
  caller: Caller;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

export function operationsOf(document: OpenApiDocument): Operation[] {
  const schemas = document.components?.schemas ?? {};
  const resolve = (schema: Schema | undefined, depth = 0): Schema => {
    if (!schema || depth > 20) return {};
    if (schema.$ref) return resolve(schemas[schema.$ref.replace('#/components/schemas/', '')], depth + 1);
    const resolved: Schema = { ...schema };
    if (schema.properties) resolved.properties = Object.fromEntries(Object.entries(schema.properties).map(([name, value]) => [name, resolve(value, depth + 1)]));
    if (schema.items) resolved.items = resolve(schema.items, depth + 1);
    for (const key of ['anyOf', 'oneOf', 'allOf'] as const) if (schema[key]) resolved[key] = schema[key]!.map((branch) => resolve(branch, depth + 1));
    return resolved;
  };
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => {
        const content = operation.requestBody?.content ?? {};
        const contentTypes = Object.keys(content);
        return {
          method: method.toUpperCase(),
          path,
          parameters: (operation.parameters ?? []).map((parameter) => ({ ...parameter, schema: resolve(parameter.schema) })),
          body: contentTypes.length
            ? { required: operation.requestBody?.required ?? false, contentTypes, schema: resolve(content[contentTypes[0]!]!.schema) }
            : undefined,
        };
      }),
  );
}

const typesOf = (schema: Schema): string[] => {
  if (schema.anyOf ?? schema.oneOf) return (schema.anyOf ?? schema.oneOf)!.flatMap(typesOf);
  if (Array.isArray(schema.type)) return schema.type;
  if (schema.type) return [schema.type];
  if (schema.properties) return ['object'];
  if (schema.enum) return [...new Set(schema.enum.map((value) => (value === null ? 'null' : typeof value)))];
  return [];
};

/** The text with every lone surrogate replaced (String#toWellFormed, which the es2022 lib does not type). */
const wellFormed = (text: string) => text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

// ---- hostile scalars --------------------------------------------------------------------

const KB100 = 100 * 1024;
/** Strings a service must reject or store, never choke on. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constant(''),
  fc.constant('x'.repeat(KB100)),
  fc.constant('\u00e9'.repeat(KB100 / 2)),
  fc.constant('\u0000'),
  fc.string().map((text) => `a\u0000${text}`),
  fc.constant('\ud800'),
  fc.constant('tail \udfff'),
  fc.constant('\udc00\ud800'),
  fc.constant('\ufeff\u202e\u200b'),
  fc.constant('😀'.repeat(300)),
  fc.constant("'; drop table identity; --"),
  fc.constant('${jndi:ldap://x}{{7*7}}%s%n'),
  fc.constant('../../../../etc/passwd'),
  fc.constant('null'),
  fc.constant('-1'),
  fc.constant('1e309'),
  fc.constant('NaN'),
  fc.constant('true'),
  fc.constant('00000000-0000-0000-0000-000000000000'),
  fc.constant('a@b'),
  fc.constant('\r\n\t'),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 40 }),
);

/** Numbers at and past a schema's bounds, and the ones JSON can carry that code forgets. */
function boundaryNumbers(schema: Schema): fc.Arbitrary<number> {
  const picks = [0, -0, -1, 1, 0.5, -0.001, 2 ** 31 - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 2 ** 53 + 2, -(2 ** 53) - 2, 1e21, 1e300, -1e300, Number.MIN_VALUE, 0.1 + 0.2];
  for (const bound of [schema.minimum, schema.maximum, schema.exclusiveMinimum, schema.exclusiveMaximum]) {
    if (bound === undefined) continue;
    picks.push(bound, bound - 1, bound + 1, bound - 0.001, bound + 0.001, bound * 10, bound + 0.5);
  }
  return fc.constantFrom(...picks);
}

/** A JSON text nested `depth` levels deep, in arrays or objects. */
export const deepJson = (depth: number, kind: 'array' | 'object') =>
  kind === 'array' ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

/** A value of any JSON type but the schema's own. */
function wrongType(schema: Schema): fc.Arbitrary<unknown> {
  const types = typesOf(schema);
  const candidates: fc.Arbitrary<unknown>[] = [];
  if (!types.includes('string')) candidates.push(fc.constantFrom('1', 'true', '', 'x'));
  if (!types.includes('number') && !types.includes('integer')) candidates.push(fc.constantFrom(0, -1, 1.5, 1e300));
  if (!types.includes('boolean')) candidates.push(fc.boolean());
  if (!types.includes('null')) candidates.push(fc.constant(null));
  if (!types.includes('array')) candidates.push(fc.constantFrom([], [1], [[]], ['a', null]));
  if (!types.includes('object')) candidates.push(fc.constantFrom({}, { a: 1 }, { __proto__: { admin: true } }, { constructor: { prototype: {} } }));
  return fc.oneof(...candidates);
}

/** A value the schema accepts (approximately: patterns are honoured only through formats and enums). */
export function validValue(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum?.length) return fc.constantFrom(...schema.enum);
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches?.length) return fc.oneof(...branches.map((branch) => validValue(branch, depth + 1)));
  const type = typesOf(schema)[0];
  switch (type) {
    case 'string': {
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'email') return fc.emailAddress();
      if (schema.format === 'date-time') return fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((date) => date.toISOString());
      if (schema.format === 'uri') return fc.webUrl();
      const min = schema.minLength ?? 0;
      const max = Math.max(min, Math.min(schema.maxLength ?? 40, 40));
      return fc.string({ unit: fc.constantFrom(...'abcdefxyz0189-'), maxLength: max }).map((text) => text.padEnd(min, 'a').slice(0, max));
    }
    case 'integer':
      return fc.integer({ min: Math.max(schema.minimum ?? -1000, -(2 ** 31)), max: Math.min(schema.maximum ?? 1000, 2 ** 31 - 1) });
    case 'number':
      return fc.integer({ min: Math.ceil(schema.minimum ?? -1000), max: Math.floor(Math.min(schema.maximum ?? 1000, 1e6)) });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return depth > 4 ? fc.constant([]) : fc.array(validValue(schema.items ?? {}, depth + 1), { maxLength: Math.min(schema.maxItems ?? 3, 3) });
    case 'object':
      return depth > 4 ? fc.constant({}) : validObject(schema, depth);
    default:
      return fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean());
  }
}

/**
 * Values for fields whose schema says too little (a free string for grant_type, an email the
 * generator would rarely get past the pattern): so requests reach the code behind validation.
 */
const HINTS: Record<string, fc.Arbitrary<unknown>> = {
  grant_type: fc.constantFrom('password', 'refresh_token', 'client_credentials', 'authorization_code'),
  username: fc.constantFrom('admin@example.com', 'nobody@example.com'),
  email: fc.integer({ min: 0, max: 1e9 }).map((n) => `fuzz-${n}@example.com`),
  token_type_hint: fc.constantFrom('access_token', 'refresh_token'),
};

function validObject(schema: Schema, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const names = Object.keys(properties);
  if (!names.length) return fc.constant({});
  return fc.record(Object.fromEntries(names.map((name) => [name, HINTS[name] ?? validValue(properties[name]!, depth + 1)])), {
    requiredKeys: names.filter((name) => required.has(name)),
  });
}

/** A value for a field: mostly valid, often hostile for its schema. */
export function fieldValue(schema: Schema): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: validValue(schema) },
    { weight: 2, arbitrary: hostileString },
    { weight: 2, arbitrary: boundaryNumbers(schema) },
    { weight: 2, arbitrary: wrongType(schema) },
  );
}

// ---- bodies ------------------------------------------------------------------------------

/** A JSON body for `schema`: valid, one field mutated, a required one missing, an extra one, or not an object at all. */
export function jsonBody(schema: Schema): fc.Arbitrary<unknown> {
  const properties = schema.properties ?? {};
  const names = Object.keys(properties);
  const base = validValue(schema) as fc.Arbitrary<Record<string, unknown>>;
  // Arbitraries are built once here, never inside chain(): building one is far dearer than drawing from it.
  const mutated = names.length
    ? fc.tuple(base, fc.oneof(...names.map((name) => fc.tuple(fc.constant(name), fieldValue(properties[name]!))))).map(([body, [name, value]]) => ({ ...body, [name]: value }))
    : base;
  const missing = names.length ? fc.tuple(base, fc.constantFrom(...names)).map(([body, name]) => Object.fromEntries(Object.entries(body).filter(([key]) => key !== name))) : base;
  const extra = fc
    .tuple(base, fc.constantFrom('id', 'createdAt', 'updatedAt', 'password', 'hash', 'roles', 'admin', '__proto__', 'constructor', '', '\u0000', 'x'.repeat(1000)), fc.oneof(hostileString, fc.jsonValue({ maxDepth: 2 })))
    .map(([body, name, value]) => JSON.parse(`{${JSON.stringify(name)}:${JSON.stringify(value) ?? 'null'},${JSON.stringify(body).slice(1)}`.replace(/,}$/, '}')) as unknown);
  const everyFieldHostile = names.length
    ? fc.record(Object.fromEntries(names.map((name) => [name, fieldValue(properties[name]!)])), { requiredKeys: [] })
    : base;
  return fc.oneof(
    { weight: 3, arbitrary: base },
    { weight: 6, arbitrary: mutated },
    { weight: 2, arbitrary: missing },
    { weight: 2, arbitrary: extra },
    { weight: 3, arbitrary: everyFieldHostile },
    { weight: 1, arbitrary: wrongType({ type: 'object' }) },
  );
}

/** Raw body bytes: JSON of the body, or text that is not what the content type says. */
export function rawBody(schema: Schema): fc.Arbitrary<Buffer> {
  return fc.oneof(
    { weight: 12, arbitrary: jsonBody(schema).map((value) => Buffer.from(JSON.stringify(value) ?? 'null')) },
    { weight: 1, arbitrary: fc.constantFrom('', '{', '{"a":', '[1,]', "{'a':1}", 'null', '"\\ud800"', '{"a":"\\u0000"}', '{"a":1,"a":2}', '\ufeff{}', '1'.repeat(400)).map((text) => Buffer.from(text)) },
    { weight: 1, arbitrary: fc.constantFrom(3000, 100_000).chain((depth) => fc.constantFrom<'array' | 'object'>('array', 'object').map((kind) => Buffer.from(deepJson(depth, kind)))) },
    // Lone surrogates and NUL as raw bytes (CESU-style, not escaped) inside a JSON string.
    { weight: 1, arbitrary: fc.constantFrom(Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]), Buffer.from('{"name":"a\u0000b"}'), Buffer.from([0xff, 0xfe, 0x7b, 0x7d])) },
  );
}

/** A form body (application/x-www-form-urlencoded) from the same fields. */
export function formBody(schema: Schema): fc.Arbitrary<Buffer> {
  return fc.tuple(jsonBody(schema), fc.constantFrom('plain', 'repeated', 'raw')).map(([value, style]) => {
      if (style === 'raw') return Buffer.from(typeof value === 'string' ? wellFormed(value) : '%zz&&=&a=%00&b=%ED%A0%80&grant_type');
      const entries: [string, unknown][] = value && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value) : [['value', value]];
      const params = new URLSearchParams();
      for (const [key, field] of entries) {
        const text = typeof field === 'string' ? field : (JSON.stringify(field) ?? '');
        params.append(key, wellFormed(text));
        if (style === 'repeated') params.append(key, 'again');
      }
      return Buffer.from(params.toString());
    });
}

// ---- paths and queries -------------------------------------------------------------------

/** Path segments where a UUID belongs; `known` are ids of records that exist. */
export function uuidSegment(known: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.uuid() },
    { weight: 3, arbitrary: known.length ? fc.constantFrom(...known) : fc.uuid() },
    {
      weight: 5,
      arbitrary: fc.constantFrom(
        'not-a-uuid',
        '00000000-0000-0000-0000-000000000000',
        'ffffffff-ffff-ffff-ffff-ffffffffffff',
        '123',
        '-1',
        'null',
        'undefined',
        '%00',
        'a%00b',
        '%ED%A0%80',
        '%ff%fe',
        '%2e%2e',
        '..%2f..%2fadmin',
        '%20',
        'x'.repeat(8000),
        '1e10',
        "1'%20or%20'1'%3D'1",
        'AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA',
        '{id}',
        '%7Bid%7D',
      ),
    },
    { weight: 1, arbitrary: fc.uuid().map((id) => `${id}x`) },
    { weight: 1, arbitrary: fc.uuid().map((id) => id.replace(/-/g, '')) },
  );
}

/** A path segment for a string parameter (an email, say). */
export function stringSegment(): fc.Arbitrary<string> {
  return fc.oneof(
    fc.emailAddress().map(encodeURIComponent),
    fc.constantFrom('admin%40example.com', '%00', 'a%00%40b.c', '%ED%A0%80', '%40', 'x'.repeat(5000), '%25', 'a%2Fb', '..'),
    fc.string({ maxLength: 20 }).map((text) => encodeURIComponent(wellFormed(text))),
  );
}

const encode = (value: unknown) => (typeof value === 'string' ? wellFormed(value) : (JSON.stringify(value) ?? ''));

/**
 * Values in a list filter's PostgREST syntax (`op.value`): its documented example, and every
 * operator, negated or not, or a made-up one, with hostile operands and lists.
 */
function filterValue(example: string): fc.Arbitrary<string> {
  const operator = fc.constantFrom('eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'in', 'is', 'not.eq', 'not.in', 'not.is', 'not.like', 'between', 'not', 'EQ');
  const operand = fc.oneof(
    hostileString.map(wellFormed),
    fc.constantFrom('()', '(a,b)', '("a,b",c)', '("unterminated', '(,)', '(1,2)', 'null', 'true', '*%_\\*', '2025-01-01T00:00:00Z', '10', '-1', '1e309'),
    fc.constant(example.slice(example.indexOf('.') + 1)),
  );
  return fc.oneof(fc.constant(example), fc.tuple(operator, operand).map(([op, value]) => `${op}.${value}`));
}

/** A query string for an operation's query parameters, with odd shapes mixed in. */
export function queryString(parameters: Parameter[]): fc.Arbitrary<string> {
  const declared = parameters.filter((parameter) => parameter.in === 'query');
  const pair = (name: string, value: string) => `${encodeURIComponent(name)}=${value}`;
  const declaredPair = declared.length
    ? fc.oneof(
        ...declared.map((parameter) =>
          fc.oneof(
            validValue(parameter.schema ?? {}).map((value) => pair(parameter.name, encodeURIComponent(encode(value)))),
            fieldValue(parameter.schema ?? {}).map((value) => pair(parameter.name, encodeURIComponent(encode(value)))),
            fc.constantFrom('', '%00', 'a%00', '%ED%A0%80', '%zz', '%', 'x'.repeat(20_000)).map((raw) => pair(parameter.name, raw)),
            ...(typeof parameter.example === 'string' ? [filterValue(parameter.example).map((value) => pair(parameter.name, encodeURIComponent(value)))] : []),
          ),
        ),
      )
    : fc.constant('');
  const oddPair = fc.constantFrom(
    'limit=0',
    'limit=101',
    'limit=-1',
    'limit=1e3',
    'limit=1.5',
    'limit=abc',
    'limit=9999999999999999999999',
    'limit=',
    'offset=-1',
    'offset=1.5',
    'offset=9007199254740993',
    'offset=1e400',
    'offset=',
    'sort=',
    'sort=-',
    'sort=--createdAt',
    'sort=password',
    'sort=hash',
    'sort=id,-name',
    'sort=createdAt%00',
    'unknownFilter=1',
    'password=x',
    'secret=x',
    '__proto__=1',
    'constructor[prototype][admin]=1',
    'a[b][c]=1',
    'roles[]=admin',
    '=',
    '&',
    '==',
    'a',
    '%00=%00',
    '%ED%A0%80=1',
  );
  return fc
    .tuple(fc.array(fc.oneof({ weight: 3, arbitrary: declaredPair }, { weight: 2, arbitrary: oddPair }), { maxLength: 5 }), fc.constantFrom('single', 'repeated', 'empty'))
    .map(([pairs, style]) => {
      if (style === 'empty') return pairs.length ? `?${pairs.join('&')}&&` : '?';
      if (style === 'repeated' && pairs.length) return `?${[...pairs, ...pairs].join('&')}`;
      return pairs.length ? `?${pairs.join('&')}` : '';
    });
}

/** Content types a body is sent with, declared or not. */
export function contentType(declared: string[]): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...declared) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        undefined,
        'application/json; charset=utf-8',
        'application/json; charset=utf-16',
        'application/json; charset=latin1',
        'application/JSON',
        'application/problem+json',
        'application/merge-patch+json',
        'text/plain',
        'text/html',
        'application/xml',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/octet-stream',
        '*/*',
        ';;;',
        'application/json; boundary',
        'application/json;charset="',
      ),
    },
  );
}

/** Accept-Language values: real ones, odd ones and long ones. */
export const acceptLanguage = fc.constantFrom(undefined, 'en', 'pt-BR', 'es', 'fr;q=0.9, de;q=0.8', 'de', 'xx', '*', ';q=', 'en;q=abc', 'a'.repeat(4000), 'pt-BR,pt;q=0.9,en-US;q=0.8,en;q=0.7');
