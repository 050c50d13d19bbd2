/**
 * A remote tool's JSON Schema as a Standard Schema validator that can also describe itself.
 * @module
 */

import type { jsonSchemaValidator } from '@modelcontextprotocol/client';
import type { StandardSchemaV1 } from '../../index.js';

/** A Standard Schema v1 validator with the Standard JSON Schema `jsonSchema` describer. */
export interface RemoteSchema extends StandardSchemaV1<Record<string, unknown>> {
  readonly '~standard': StandardSchemaV1.Props<Record<string, unknown>> & {
    readonly jsonSchema: {
      readonly input: (options?: object) => Record<string, unknown>;
      readonly output: (options?: object) => Record<string, unknown>;
    };
  };
}

/**
 * Wraps a remote tool's input schema so the registry validates args locally (the model gets our
 * `schema` envelope, not a remote round trip) and `registry.list()` shows the remote schema.
 *
 * @example
 * registry.register({ name: 'get_weather', inputSchema: remoteSchema(tool.inputSchema, new AjvJsonSchemaValidator()), handler });
 */
export function remoteSchema(schema: Record<string, unknown>, validator: jsonSchemaValidator): RemoteSchema {
  const copy = structuredClone(schema);
  let check: (value: unknown) => StandardSchemaV1.Result<Record<string, unknown>>;
  try {
    const compiled = validator.getValidator<Record<string, unknown>>(copy);
    check = (value) => {
      const result = compiled(value);
      return result.valid ? { value: result.data } : { issues: [{ message: result.errorMessage }] };
    };
  } catch (error) {
    // A schema the validator cannot compile (a dangling $ref) still lets the remote judge the
    // args; locally we only insist on an object, as MCP does.
    const reason = error instanceof Error ? error.message : String(error);
    check = (value) =>
      typeof value === 'object' && value !== null && !Array.isArray(value)
        ? { value: value as Record<string, unknown> }
        : { issues: [{ message: `must be an object (the remote schema could not be compiled: ${reason})` }] };
  }
  const describe = (): Record<string, unknown> => structuredClone(copy);
  return {
    '~standard': {
      version: 1,
      vendor: 'tool-dispatcher/mcp',
      validate: check,
      jsonSchema: { input: describe, output: describe },
    },
  };
}
