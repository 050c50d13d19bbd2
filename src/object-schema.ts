/**
 * A tool's JSON Schema made acceptable to providers: a root `type: 'object'`, no `$schema`.
 * @module
 */

/** A JSON Schema whose root is an object schema, as OpenAI, Anthropic, MCP and the AI SDK require. */
export interface JsonObjectSchema {
  /** Always `'object'`: tool arguments are a JSON object. */
  type: 'object';
  /** The argument fields (`{}` when the source described none). */
  properties: Record<string, unknown>;
  /** The fields that must be present. */
  required?: string[];
  /** Any other JSON Schema keyword the source had (`additionalProperties`, `$defs`, …). */
  [keyword: string]: unknown;
}

type Schema = Record<string, unknown>;

// Root keywords that only make sense beside the alternatives they were written for.
const unionKeys = new Set(['anyOf', 'oneOf', 'allOf', '$schema', 'type']);

/**
 * A copy of a tool's input schema every provider accepts: no `$schema`, a root `type: 'object'`
 * with `properties` (a root union merged into one object); never throws.
 *
 * @example
 * toObjectSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema' });
 * // { type: 'object', properties: {} }
 * const tools = registry.list().map((t) => ({ name: t.name, input_schema: toObjectSchema(t.inputSchema) }));
 */
export function toObjectSchema(schema: Record<string, unknown>): JsonObjectSchema {
  if (!isSchema(schema)) return { type: 'object', properties: {} };
  const copy = cloneJson(schema);
  delete copy['$schema'];
  return asObject(resolveRootRef(copy), copy);
}

function asObject(schema: Schema, root: Schema): JsonObjectSchema {
  const branches = rootBranches(schema, root);
  if (branches !== undefined) return merged(schema, branches);
  if (!describesObject(schema)) {
    // A string or array root cannot describe a JSON object of arguments; keep the annotations.
    const { description, title } = schema;
    return {
      type: 'object',
      properties: {},
      ...(typeof title === 'string' ? { title } : {}),
      ...(typeof description === 'string' ? { description } : {}),
      ...definitions(schema),
    };
  }
  const { type: _type, properties, ...rest } = schema;
  return { ...rest, type: 'object', properties: isSchema(properties) ? properties : {} };
}

// The object branches of a root union or intersection, with how they combine.
function rootBranches(schema: Schema, root: Schema): { mode: 'union' | 'all'; items: Schema[] } | undefined {
  for (const key of ['anyOf', 'oneOf', 'allOf'] as const) {
    const list = schema[key];
    if (!Array.isArray(list)) continue;
    const items = list
      .filter(isSchema)
      .map((item) => resolveRootRef(item, root))
      .flatMap((item) => {
        const nested = rootBranches(item, root);
        // A nested union of the same kind flattens; any other nesting merges to one object first.
        if (nested === undefined) return [item];
        return nested.mode === (key === 'allOf' ? 'all' : 'union') ? nested.items : [merged(item, nested)];
      })
      .filter(describesObject);
    return { mode: key === 'allOf' ? 'all' : 'union', items };
  }
  return undefined;
}

function merged(
  schema: Schema,
  { mode, items }: { mode: 'union' | 'all'; items: Schema[] },
): JsonObjectSchema {
  const properties: Record<string, unknown> = {};
  const variants = new Map<string, unknown[]>();
  for (const item of items) {
    const props = isSchema(item['properties']) ? item['properties'] : {};
    for (const [key, value] of Object.entries(props)) {
      const seen = variants.get(key);
      if (seen === undefined) variants.set(key, [value]);
      else if (!seen.some((other) => sameJson(other, value))) seen.push(value);
    }
  }
  for (const [key, seen] of variants) {
    const value = seen.length === 1 ? seen[0] : mode === 'all' ? { allOf: seen } : mergedProperty(seen);
    // defineProperty, so a "__proto__" field stays a plain field.
    Object.defineProperty(properties, key, { value, enumerable: true, writable: true, configurable: true });
  }

  const requiredSets = items.map((item) => new Set(stringList(item['required'])));
  const keys = [...variants.keys()];
  const required =
    items.length === 0
      ? []
      : mode === 'all'
        ? keys.filter((key) => requiredSets.some((set) => set.has(key)))
        : keys.filter((key) => requiredSets.every((set) => set.has(key)));

  const result: JsonObjectSchema = { type: 'object', properties };
  if (required.length > 0) result.required = required;
  for (const [key, value] of Object.entries(schema)) {
    if (unionKeys.has(key) || key === 'properties' || key === 'required') continue;
    Object.defineProperty(result, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return result;
}

// One schema for a property the branches describe differently: an enum when each is a const or
// an enum, otherwise their anyOf.
function mergedProperty(seen: unknown[]): unknown {
  if (seen.length === 1) return seen[0];
  const values: unknown[] = [];
  for (const item of seen) {
    if (!isSchema(item)) return { anyOf: seen };
    const extra = Object.keys(item).filter(
      (key) => !['const', 'enum', 'type', 'description', 'title'].includes(key),
    );
    if (extra.length > 0) return { anyOf: seen };
    if ('const' in item) values.push(item['const']);
    else if (Array.isArray(item['enum'])) values.push(...item['enum']);
    else return { anyOf: seen };
  }
  const unique = values.filter(
    (value, index) => values.findIndex((other) => sameJson(other, value)) === index,
  );
  const types = new Set(unique.map((value) => (value === null ? 'null' : typeof value)));
  const [only] = types;
  const type =
    types.size === 1 && ['string', 'number', 'boolean', 'null'].includes(only as string) ? only : undefined;
  return type === undefined ? { enum: unique } : { type, enum: unique };
}

function describesObject(schema: Schema): boolean {
  const { type } = schema;
  if (type === 'object') return true;
  if (Array.isArray(type)) return type.includes('object');
  // No type: an object schema if it only says object-ish things (or nothing at all).
  if (type !== undefined) return false;
  return ![
    'items',
    'prefixItems',
    'enum',
    'const',
    'pattern',
    'minimum',
    'maximum',
    'minLength',
    'maxLength',
    'format',
  ].some((key) => key in schema);
}

// A root `$ref` into the root's own `$defs`/`definitions` (how recursive schemas are written):
// its target, with the root's definitions kept so inner refs still resolve.
function resolveRootRef(schema: Schema, root: Schema = schema): Schema {
  const ref = schema['$ref'];
  if (typeof ref !== 'string') return schema;
  const match = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref);
  const defs = match ? root[match[1] as string] : undefined;
  const target =
    match && isSchema(defs)
      ? defs[
          decodeURIComponent(match[2] as string)
            .replaceAll('~1', '/')
            .replaceAll('~0', '~')
        ]
      : undefined;
  if (!isSchema(target)) return schema;
  const { $ref: _ref, ...rest } = schema;
  return { ...target, ...rest };
}

function definitions(schema: Schema): Schema {
  const out: Schema = {};
  if (isSchema(schema['$defs'])) out['$defs'] = schema['$defs'];
  if (isSchema(schema['definitions'])) out['definitions'] = schema['definitions'];
  return out;
}

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function sameJson(a: unknown, b: unknown): boolean {
  return a === b || safeStringify(a) === safeStringify(b);
}

function safeStringify(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

// A deep copy, so callers may change the result without touching the registry's cached schema.
function cloneJson(schema: Schema): Schema {
  try {
    return structuredClone(schema);
  } catch {
    const text = safeStringify(schema);
    const copy: unknown = text === undefined ? {} : JSON.parse(text);
    return isSchema(copy) ? copy : {};
  }
}
