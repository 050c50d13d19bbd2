/**
 * OpenAI's strict mode: a tool schema rewritten to the Structured Outputs subset, and the nulls
 * the model then sends for optional fields taken back out before our validator sees them.
 * @module
 */

import type { JsonObjectSchema } from '../../middleware/index.js';

type Schema = Record<string, unknown>;

/**
 * Where the rewrite made an optional field required-but-nullable: the model sends `null` there
 * for "absent", which the tool's own schema (a zod `.optional()`, say) would reject.
 */
export interface NullPlan {
  /** Optional fields of this object that were not nullable before. */
  readonly optional: ReadonlySet<string>;
  /** Plans for object-valued fields. */
  readonly properties: ReadonlyMap<string, NullPlan>;
  /** The plan for each array item. */
  readonly items: NullPlan | undefined;
}

/** A strict schema and, when it made optional fields nullable, where to strip the model's nulls. */
export interface StrictSchema {
  /** The rewritten schema. */
  readonly schema: JsonObjectSchema;
  /** Where to drop nulls from the model's arguments; `undefined` when nothing was optional. */
  readonly plan: NullPlan | undefined;
}

// Composition and object/array keywords the strict subset has no room for: rewriting them would
// change what the schema accepts.
const refused = [
  'allOf',
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'patternProperties',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'prefixItems',
  'contains',
  'minContains',
  'maxContains',
] as const;

// Annotations and narrowing the strict subset rejects; dropping them loses nothing, since the
// tool's own validator still checks every call.
const dropped = new Set([
  'default',
  'examples',
  '$comment',
  '$id',
  '$anchor',
  'readOnly',
  'writeOnly',
  'deprecated',
  'contentEncoding',
  'contentMediaType',
  'minProperties',
  'maxProperties',
  'uniqueItems',
]);

const strictFormats = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uuid',
]);

/**
 * Rewrites `schema` to OpenAI's strict subset: every object closed (`additionalProperties:
 * false`) with every property required, optional ones made nullable; `oneOf` becomes `anyOf`;
 * unsupported annotations and formats are dropped.
 *
 * @throws TypeError naming the tool for a schema the subset cannot express (an open record, `allOf`, `not`, tuples…).
 */
export function toStrictSchema(schema: JsonObjectSchema, wireName: string): StrictSchema {
  const plan = emptyPlan();
  const rewritten = strictNode(schema, '', plan, wireName) as JsonObjectSchema;
  return { schema: rewritten, plan: isEmpty(plan) ? undefined : plan };
}

interface MutablePlan {
  optional: Set<string>;
  properties: Map<string, MutablePlan>;
  items: MutablePlan | undefined;
}

function emptyPlan(): MutablePlan {
  return { optional: new Set(), properties: new Map(), items: undefined };
}

function isEmpty(plan: MutablePlan): boolean {
  return plan.optional.size === 0 && plan.properties.size === 0 && plan.items === undefined;
}

function strictNode(value: unknown, path: string, plan: MutablePlan, tool: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const node = value as Schema;
  for (const keyword of refused) {
    if (keyword in node) refuse(tool, path, `'${keyword}'`);
  }
  const out: Schema = {};
  for (const [key, item] of Object.entries(node)) {
    if (dropped.has(key)) continue;
    if (key === 'format' && !(typeof item === 'string' && strictFormats.has(item))) continue;
    define(out, key === 'oneOf' ? 'anyOf' : key, item);
  }
  if (isObjectNode(node)) closeObject(node, out, path, plan, tool);
  if ('items' in node) {
    if (typeof node['items'] !== 'object' || node['items'] === null || Array.isArray(node['items'])) {
      refuse(tool, `${path}/items`, 'an items list or boolean');
    }
    const itemPlan = emptyPlan();
    out['items'] = strictNode(node['items'], `${path}/items`, itemPlan, tool);
    if (!isEmpty(itemPlan)) plan.items = itemPlan;
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const list = node[key];
    if (!Array.isArray(list)) continue;
    // Nulls inside a union branch are ambiguous to strip: those branches keep their own plans unused.
    out['anyOf'] = list.map((item, i) => strictNode(item, `${path}/${key}/${i}`, emptyPlan(), tool));
  }
  for (const key of ['$defs', 'definitions'] as const) {
    const defs = node[key];
    if (typeof defs !== 'object' || defs === null) continue;
    const copy: Schema = {};
    for (const [name, item] of Object.entries(defs))
      define(copy, name, strictNode(item, `${path}/${key}/${name}`, emptyPlan(), tool));
    out[key] = copy;
  }
  return out;
}

function isObjectNode(node: Schema): boolean {
  const { type } = node;
  return (
    type === 'object' ||
    (Array.isArray(type) && type.includes('object')) ||
    (type === undefined && 'properties' in node)
  );
}

function closeObject(node: Schema, out: Schema, path: string, plan: MutablePlan, tool: string): void {
  const extra = node['additionalProperties'];
  if (extra !== undefined && extra !== false) {
    // `{}` (what zod writes for a loose object) is as open as `true`: both need a fixed key set.
    refuse(tool, path, "'additionalProperties' other than false (a record or a loose object)");
  }
  out['additionalProperties'] = false;
  const properties = (
    typeof node['properties'] === 'object' && node['properties'] !== null ? node['properties'] : {}
  ) as Schema;
  const required = new Set(
    Array.isArray(node['required'])
      ? node['required'].filter((key): key is string => typeof key === 'string')
      : [],
  );
  const props: Schema = {};
  for (const [key, item] of Object.entries(properties)) {
    const childPlan = emptyPlan();
    let child = strictNode(item, `${path}/properties/${key}`, childPlan, tool);
    if (!isEmpty(childPlan)) plan.properties.set(key, childPlan);
    if (!required.has(key)) {
      if (!allowsNull(item)) plan.optional.add(key);
      child = nullable(child);
    }
    define(props, key, child);
  }
  out['properties'] = props;
  out['required'] = Object.keys(props);
}

function allowsNull(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return value === true;
  const node = value as Schema;
  if (node['type'] === 'null' || (Array.isArray(node['type']) && node['type'].includes('null'))) return true;
  if (Array.isArray(node['enum']) && node['enum'].includes(null)) return true;
  if ('const' in node && node['const'] === null) return true;
  const branches = [node['anyOf'], node['oneOf']].filter(Array.isArray).flat();
  return branches.some(allowsNull);
}

function nullable(value: unknown): unknown {
  if (allowsNull(value)) return value;
  if (typeof value !== 'object' || value === null) return { anyOf: [value, { type: 'null' }] };
  const node = value as Schema;
  const { type } = node;
  const simple = typeof type === 'string' && !('anyOf' in node) && !('$ref' in node);
  if (simple && Array.isArray(node['enum']))
    return { ...node, type: [type, 'null'], enum: [...node['enum'], null] };
  if (simple && !('const' in node)) return { ...node, type: [type, 'null'] };
  if (
    Array.isArray(node['anyOf']) &&
    Object.keys(node).every((key) => key === 'anyOf' || key === 'description')
  ) {
    return { ...node, anyOf: [...node['anyOf'], { type: 'null' }] };
  }
  return { anyOf: [node, { type: 'null' }] };
}

function refuse(tool: string, path: string, what: string): never {
  throw new TypeError(
    `strict: true cannot describe tool "${tool}": ${what} at ${path === '' ? 'the root' : path} is outside OpenAI's strict subset; pass strict: false`,
  );
}

function define(target: Schema, key: string, value: unknown): void {
  // defineProperty, so a "__proto__" field stays a plain field.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * The model's arguments with the nulls it sent for fields that were optional (before strict mode
 * made them nullable) removed, so the tool's own validator sees them absent.
 */
export function stripOptionalNulls(args: unknown, plan: NullPlan): unknown {
  if (Array.isArray(args))
    return plan.items === undefined ? args : args.map((item) => stripOptionalNulls(item, plan.items!));
  if (typeof args !== 'object' || args === null) return args;
  const out: Schema = {};
  for (const [key, value] of Object.entries(args)) {
    if (value === null && plan.optional.has(key)) continue;
    const child = plan.properties.get(key);
    define(out, key, child === undefined ? value : stripOptionalNulls(value, child));
  }
  return out;
}
