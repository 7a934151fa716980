// Reading the platform's OpenAPI document in tests: its operations, its schemas with every
// `$ref` resolved, and a real JSON Schema 2020-12 validator (ajv) for the examples it offers
// and the answers it describes.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
// A CommonJS module whose function is its `default` export too; TypeScript sees only that one.
import formats from 'ajv-formats';

const addFormats = formats.default;

/* eslint-disable @typescript-eslint/no-explicit-any -- a parsed document: assertions check its shape */
export type OpenApi = Record<string, any>;
export type JsonSchema = Record<string, any>;

export interface Operation {
  method: string;
  path: string;
  operation: OpenApi;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

export function operationsOf(document: OpenApi): Operation[] {
  return Object.entries(document.paths as Record<string, OpenApi>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => ({ method, path, operation })),
  );
}

/** What a `$ref` of the document points at (`#/components/schemas/Problem`). */
export function resolveRef(document: OpenApi, ref: string): any {
  if (!ref.startsWith('#/')) throw new Error(`not a local reference: ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .reduce((node, key) => node?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], document);
}

/** `value` with every `$ref` replaced by what it names, recursively (the document has no cycles). */
export function dereference(document: OpenApi, value: unknown, depth = 0): any {
  if (depth > 50) throw new Error('reference cycle');
  if (Array.isArray(value)) return value.map((item) => dereference(document, item, depth + 1));
  if (!value || typeof value !== 'object') return value;
  const { $ref, ...rest } = value as { $ref?: string };
  if (typeof $ref === 'string') {
    const target = resolveRef(document, $ref);
    if (target === undefined) throw new Error(`unresolved reference ${$ref}`);
    return dereference(document, { ...target, ...rest }, depth + 1);
  }
  return Object.fromEntries(Object.entries(rest).map(([key, child]) => [key, dereference(document, child, depth + 1)]));
}

/**
 * A JSON Schema 2020-12 validator (OpenAPI 3.1's dialect) with the formats the document uses.
 * `multipleOfPrecision`: `multipleOf: 0.01` on a binary double (9.99 / 0.01 is 998.9999...)
 * is decided to nine decimals, as the API's own validator (zod) allows for.
 */
export function schemaValidator(document: OpenApi): (schema: JsonSchema, value: unknown) => string | undefined {
  const ajv = new Ajv2020({ strict: false, allErrors: true, multipleOfPrecision: 9 });
  addFormats(ajv);
  const compiled = new Map<string, ValidateFunction>();
  return (schema, value) => {
    const resolved = dereference(document, schema);
    const key = JSON.stringify(resolved);
    let validate = compiled.get(key);
    if (!validate) compiled.set(key, (validate = ajv.compile(resolved)));
    return validate(value) ? undefined : ajv.errorsText(validate.errors);
  };
}

export interface ExampleCheck {
  /** Where in the document: `paths./api/v1/products.post.requestBody...examples[0]`. */
  where: string;
  /** Why the value does not satisfy its schema; undefined when it does. */
  error?: string;
}

/**
 * Every example and default of the document checked against the schema it illustrates: a
 * schema's `examples`, `example` and `default`, and the `example`/`examples` of parameters,
 * headers and media types.
 */
export function checkExamples(document: OpenApi): ExampleCheck[] {
  const validate = schemaValidator(document);
  const checks: ExampleCheck[] = [];
  const check = (where: string, schema: JsonSchema | undefined, value: unknown) => {
    if (schema) checks.push({ where, error: validate(schema, value) });
  };
  const visitSchema = (schema: unknown, where: string) => {
    if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return;
    const node = schema as JsonSchema;
    if (node.$ref) return;
    (node.examples ?? []).forEach((value: unknown, i: number) => check(`${where}.examples[${i}]`, node, value));
    if ('example' in node) check(`${where}.example`, node, node.example);
    if ('default' in node) check(`${where}.default`, node, node.default);
    for (const [name, child] of Object.entries(node.properties ?? {})) visitSchema(child, `${where}.properties.${name}`);
    for (const keyword of ['items', 'additionalProperties', 'not', 'contains']) visitSchema(node[keyword], `${where}.${keyword}`);
    for (const keyword of ['anyOf', 'oneOf', 'allOf', 'prefixItems']) {
      (node[keyword] ?? []).forEach((child: unknown, i: number) => visitSchema(child, `${where}.${keyword}[${i}]`));
    }
  };
  // Parameters, headers and media types: `example`, or `examples` as a map of { value }.
  const visitHolder = (holder: OpenApi | undefined, where: string) => {
    if (!holder || holder.$ref) return;
    if ('example' in holder) check(`${where}.example`, holder.schema, holder.example);
    for (const [name, example] of Object.entries((holder.examples ?? {}) as Record<string, OpenApi>)) {
      check(`${where}.examples.${name}`, holder.schema, (example.$ref ? resolveRef(document, example.$ref) : example).value);
    }
    visitSchema(holder.schema, `${where}.schema`);
  };
  for (const { method, path, operation } of operationsOf(document)) {
    const at = `paths.${path}.${method}`;
    (operation.parameters ?? []).forEach((parameter: OpenApi, i: number) => visitHolder(parameter, `${at}.parameters[${i}]`));
    for (const [type, media] of Object.entries((operation.requestBody?.content ?? {}) as Record<string, OpenApi>)) {
      visitHolder(media, `${at}.requestBody.content.${type}`);
    }
    for (const [status, response] of Object.entries((operation.responses ?? {}) as Record<string, OpenApi>)) {
      for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, OpenApi>)) visitHolder(header, `${at}.responses.${status}.headers.${name}`);
      for (const [type, media] of Object.entries((response.content ?? {}) as Record<string, OpenApi>)) visitHolder(media, `${at}.responses.${status}.content.${type}`);
    }
  }
  for (const [name, schema] of Object.entries((document.components?.schemas ?? {}) as Record<string, OpenApi>)) visitSchema(schema, `components.schemas.${name}`);
  for (const [name, header] of Object.entries((document.components?.headers ?? {}) as Record<string, OpenApi>)) visitHolder(header, `components.headers.${name}`);
  return checks;
}
