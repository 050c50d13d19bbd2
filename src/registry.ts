/**
 * The tool registry: names to tool records, and the tool list a model is shown.
 * @module
 */

import { z } from 'zod';
import { optionKeys, optionsObject, rejectUnknownKeys } from './internal/options.js';
import type { StandardSchemaV1 } from './standard-schema.js';
import type { Tool, ToolAnnotations, ToolDefinition, ToolTimeout } from './types.js';

/**
 * The timeout layer's default `defaultMs`, in milliseconds.
 * @deprecated The timeout a tool gets depends on its timeout layer's options; read them there.
 */
export const defaultToolTimeoutMs = 30_000;

const toolNamePattern = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$/;

/** Options for `ToolRegistry.register`. */
export interface RegisterOptions {
  /** Replace a tool already registered under the same name instead of throwing. @default false */
  override?: boolean;
}

const registerOptionKeys = optionKeys<RegisterOptions>({ override: true });

// The fields the core reads, which `normalizeTool` checks itself; a tool's record holds these and
// the fields layers declared (`declareToolField`), so a layer can read no other.
const coreToolFields = [
  'name',
  'description',
  'inputSchema',
  'handler',
  'idempotent',
  'timeoutMs',
  'timeout',
  'cost',
  'reconcile',
  'reconcileTimeoutMs',
  'task',
  'annotations',
  'outputSchema',
] as const satisfies ReadonlyArray<keyof ToolDefinition>;

/** A field a layer reads from tools, as it declares it to the registry (see `declareToolField`). */
export interface ToolField {
  /** The field's name on `ToolDefinition` and `Tool`, as the layer merges it into both. */
  readonly name: string;
  /**
   * Throws a `TypeError` naming the field and the tool when `value` is malformed; never called
   * for `undefined`, which means the field is absent.
   *
   * @param value - The field's value in the definition.
   * @param tool - The tool's name, for the message.
   */
  readonly check: (value: unknown, tool: string) => void;
}

const layerToolFields = new Map<string, ToolField>();
let toolDefinitionKeys: readonly string[] = coreToolFields;

/**
 * Declares a tool field a layer reads, when the layer's module loads: `register` then accepts it
 * on a definition, checks it with `check` and copies it onto the tool. Merge the field's type into
 * `ToolDefinition` and `Tool` beside the call. Declaring a name again replaces its check; a field
 * the core reads itself cannot be declared.
 *
 * @example
 * declare module 'tool-dispatcher' {
 *   interface ToolDefinition<Schema, Result> { cacheTtlMs?: number }
 *   interface Tool { readonly cacheTtlMs?: number | undefined }
 * }
 * declareToolField({
 *   name: 'cacheTtlMs',
 *   check: (value, tool) => requireNumber(`cacheTtlMs of "${tool}"`, value, 0),
 * });
 */
export function declareToolField(field: ToolField): void {
  if (typeof field !== 'object' || field === null) {
    throw new TypeError(`declareToolField() takes { name, check }, got ${String(field)}`);
  }
  const { name, check } = field;
  if (typeof name !== 'string' || !/^[A-Za-z_$][\w$]*$/.test(name)) {
    throw new TypeError(`declareToolField() name must be an identifier, got ${JSON.stringify(name)}`);
  }
  if (typeof check !== 'function') {
    throw new TypeError(`declareToolField() check of "${name}" must be a function, got ${typeof check}`);
  }
  if ((coreToolFields as readonly string[]).includes(name)) {
    throw new TypeError(`declareToolField() cannot declare "${name}": the core reads that field itself`);
  }
  layerToolFields.set(name, { name, check });
  toolDefinitionKeys = Object.freeze([...coreToolFields, ...layerToolFields.keys()]);
}

const toolTimeoutKeys = optionKeys<ToolTimeout>({ idleMs: true, totalMs: true });

/** One entry of `ToolRegistry.list()`: what a model's tool list needs. */
export interface ToolListing {
  /** Unique name. */
  name: string;
  /** What the tool does. */
  description: string;
  /** The args' JSON Schema (draft 2020-12); `{}` when the validator cannot describe itself. */
  inputSchema: Record<string, unknown>;
  /** Whether running it twice is harmless. */
  idempotent: boolean;
  /** The tool's own per-attempt timeout in ms; `undefined` when the timeout layer's default applies. */
  timeoutMs: number | undefined;
  /** The tool's idle timeout, when it has one (see `ToolDefinition.timeout`). */
  timeout?: ToolTimeout;
  /** Present (`true`) only for a tool registered with `task: true`. */
  task?: true;
  /** Its MCP annotations, when it has some. */
  annotations?: ToolAnnotations;
  /** Its results' JSON Schema, when it declares an `outputSchema`. */
  outputSchema?: Record<string, unknown>;
}

/**
 * Holds the tools a dispatcher can run, by name.
 *
 * @example
 * const registry = new ToolRegistry().register({
 *   name: 'search.web',
 *   inputSchema: z.object({ query: z.string() }),
 *   handler: async ({ query }) => searchBackend(query),
 * });
 */
export class ToolRegistry {
  // A Map, so names such as "__proto__" or "toString" are never found on Object.prototype.
  readonly #tools = new Map<string, Tool>();
  readonly #jsonSchemas = new WeakMap<Tool, Record<string, unknown>>();

  /**
   * Adds a tool; the handler's args are typed from `inputSchema`.
   *
   * @param definition - The tool.
   * @param options - `override: true` replaces a tool of the same name.
   * @returns This registry, for chaining.
   * @throws TypeError for a malformed definition or a duplicate name without `override`.
   * @example
   * registry.register({ name: 'db.get_user', inputSchema: z.object({ id: z.string() }),
   *   idempotent: true, timeoutMs: 2_000, handler: async ({ id }) => db.users.get(id) });
   */
  register<Schema extends StandardSchemaV1, Result>(
    definition: ToolDefinition<Schema, Result>,
    options: RegisterOptions = {},
  ): this {
    optionsObject('register', options, registerOptionKeys);
    const tool = normalizeTool(definition);
    if (this.#tools.has(tool.name) && options.override !== true) {
      throw new TypeError(
        `A tool named "${tool.name}" is already registered; pass { override: true } to replace it`,
      );
    }
    this.#tools.set(tool.name, tool);
    return this;
  }

  /** The tool registered under `name`, or `undefined`. */
  get(name: string): Tool | undefined {
    return this.#tools.get(name);
  }

  /** Whether a tool is registered under `name`. */
  has(name: string): boolean {
    return this.#tools.has(name);
  }

  /** Removes the tool registered under `name` and says whether there was one. */
  unregister(name: string): boolean {
    return this.#tools.delete(name);
  }

  /**
   * Every tool with its args' JSON Schema, in registration order.
   *
   * @example
   * const tools = registry.list().map(({ name, description, inputSchema }) =>
   *   ({ type: 'function', function: { name, description, parameters: inputSchema } }));
   */
  list(): ToolListing[] {
    return [...this.#tools.values()].map((tool) => {
      const listing: ToolListing = {
        name: tool.name,
        description: tool.description,
        inputSchema: this.#jsonSchemaOf(tool),
        idempotent: tool.idempotent,
        timeoutMs: tool.timeoutMs,
      };
      if (tool.timeout !== undefined) listing.timeout = tool.timeout;
      if (tool.task) listing.task = true;
      if (tool.annotations !== undefined) listing.annotations = tool.annotations;
      if (tool.outputSchema !== undefined) listing.outputSchema = toJsonSchema(tool.outputSchema, 'output');
      return listing;
    });
  }

  #jsonSchemaOf(tool: Tool): Record<string, unknown> {
    let schema = this.#jsonSchemas.get(tool);
    if (schema === undefined) {
      schema = toJsonSchema(tool.inputSchema);
      this.#jsonSchemas.set(tool, schema);
    }
    return schema;
  }
}

function normalizeTool<Schema extends StandardSchemaV1, Result>(
  definition: ToolDefinition<Schema, Result>,
): Tool {
  if (typeof definition !== 'object' || definition === null) {
    throw new TypeError('A tool definition must be an object');
  }
  const where = typeof definition.name === 'string' ? `register() of "${definition.name}"` : 'register()';
  rejectUnknownKeys(where, definition, toolDefinitionKeys, 'field');
  const {
    name,
    description = '',
    inputSchema,
    handler,
    idempotent = false,
    timeoutMs,
    timeout: idleTimeout,
    cost,
    task = false,
  } = definition;
  const { reconcile, reconcileTimeoutMs = 10_000 } = definition;
  const { annotations, outputSchema } = definition;
  if (typeof name !== 'string' || !toolNamePattern.test(name)) {
    throw new TypeError(
      `name must be dotted lowercase segments such as "db.get_user", got ${JSON.stringify(name)}`,
    );
  }
  if (typeof description !== 'string') throw new TypeError(`description of "${name}" must be a string`);
  if (!isStandardSchema(inputSchema)) {
    throw new TypeError(
      `inputSchema of "${name}" must be a zod schema or another Standard Schema v1 validator`,
    );
  }
  if (outputSchema !== undefined && !isStandardSchema(outputSchema)) {
    throw new TypeError(
      `outputSchema of "${name}" must be a zod schema or another Standard Schema v1 validator`,
    );
  }
  if (
    annotations !== undefined &&
    (typeof annotations !== 'object' || annotations === null || Array.isArray(annotations))
  ) {
    throw new TypeError(`annotations of "${name}" must be an object of MCP tool hints`);
  }
  if (typeof handler !== 'function') throw new TypeError(`handler of "${name}" must be a function`);
  if (typeof idempotent !== 'boolean') throw new TypeError(`idempotent of "${name}" must be a boolean`);
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !(timeoutMs > 0))) {
    throw new TypeError(
      `timeoutMs of "${name}" must be a number > 0 (or Infinity), got ${String(timeoutMs)}`,
    );
  }
  if (idleTimeout !== undefined) checkIdleTimeout(name, idleTimeout, timeoutMs);
  checkCost(name, cost);
  if (reconcile !== undefined && typeof reconcile !== 'function') {
    throw new TypeError(`reconcile of "${name}" must be a function`);
  }
  if (typeof reconcileTimeoutMs !== 'number' || !(reconcileTimeoutMs > 0)) {
    throw new TypeError(
      `reconcileTimeoutMs of "${name}" must be a number > 0 (or Infinity), got ${String(reconcileTimeoutMs)}`,
    );
  }
  if (typeof task !== 'boolean') throw new TypeError(`task of "${name}" must be a boolean`);
  const tool: Record<string, unknown> = {
    name,
    description,
    inputSchema,
    handler,
    idempotent,
    timeoutMs,
    timeout:
      idleTimeout === undefined
        ? undefined
        : Object.freeze({ idleMs: idleTimeout.idleMs, totalMs: idleTimeout.totalMs }),
    cost,
    reconcile,
    reconcileTimeoutMs,
    task,
    annotations: annotations === undefined ? undefined : Object.freeze({ ...annotations }),
    outputSchema,
  };
  // Every declared field is on the record, `undefined` when absent, as the core's own are.
  for (const { name: field, check } of layerToolFields.values()) {
    const value = (definition as unknown as Record<string, unknown>)[field];
    if (value !== undefined) check(value, name);
    tool[field] = value;
  }
  return Object.freeze(tool) as unknown as Tool;
}

function checkIdleTimeout(name: string, given: unknown, timeoutMs: unknown): void {
  if (timeoutMs !== undefined) {
    throw new TypeError(
      `register() of "${name}" got both timeoutMs and timeout; give timeoutMs for a fixed deadline or timeout for an idle one`,
    );
  }
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new TypeError(`timeout of "${name}" must be an object { idleMs, totalMs }, got ${String(given)}`);
  }
  rejectUnknownKeys(`register() of "${name}": timeout`, given, toolTimeoutKeys, 'field');
  const { idleMs, totalMs } = given as Partial<ToolTimeout>;
  for (const [field, value] of [
    ['idleMs', idleMs],
    ['totalMs', totalMs],
  ] as const) {
    if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value)) {
      throw new TypeError(`timeout.${field} of "${name}" must be a finite number > 0, got ${String(value)}`);
    }
  }
  if ((idleMs as number) > (totalMs as number)) {
    throw new TypeError(
      `timeout.idleMs of "${name}" must be <= timeout.totalMs, got idleMs ${idleMs} and totalMs ${totalMs}`,
    );
  }
}

function checkCost(name: string, cost: unknown): void {
  const costOk =
    cost === undefined ||
    typeof cost === 'function' ||
    (typeof cost === 'number' && cost >= 0 && Number.isFinite(cost));
  if (!costOk) {
    throw new TypeError(`cost of "${name}" must be a finite number >= 0 or a function, got ${String(cost)}`);
  }
}

// ArkType's types are callable functions; what makes a validator is its `~standard.validate`.
function isStandardSchema(schema: unknown): schema is StandardSchemaV1 {
  return (
    (typeof schema === 'object' || typeof schema === 'function') &&
    schema !== null &&
    typeof (schema as Partial<StandardSchemaV1>)['~standard']?.validate === 'function'
  );
}

function toJsonSchema(schema: StandardSchemaV1, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  try {
    if (schema instanceof z.ZodType) {
      return z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
    }
    const describe = (
      schema['~standard'] as {
        jsonSchema?: Record<'input' | 'output', ((options: object) => unknown) | undefined>;
      }
    ).jsonSchema?.[io];
    if (typeof describe === 'function') {
      return describe({ target: 'draft-2020-12' }) as Record<string, unknown>;
    }
  } catch {
    // A validator that cannot describe itself still works; the model just sees an open schema.
  }
  return {};
}
