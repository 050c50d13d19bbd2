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
      return result.valid ? { value: result.data } : { issues: issuesOf(result.errorMessage) };
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

// Ajv's text (the SDK's default validator): `data/cents must be integer, data must have required
// property 'note'`, each error `data<JSON pointer> <message>`.
const ajvError = /^data((?:\/[^\s/]*)*) (.+)$/;

/**
 * A validator's error text as issues with paths, so a remote tool's bad args read as a local
 * tool's do (`cents: expected integer`, `note: required`); a text in another validator's words is
 * one issue as it is.
 */
function issuesOf(errorMessage: string | undefined): StandardSchemaV1.Issue[] {
  const text = errorMessage ?? 'the args do not match the remote schema';
  const parts = text.split(/, (?=data[/ ])/).map((part) => ajvError.exec(part));
  if (parts.some((part) => part === null)) return [{ message: text }];
  return (parts as RegExpExecArray[]).map(([, pointer = '', message = '']) => {
    const path: PropertyKey[] = pointer
      .split('/')
      .slice(1)
      .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((segment) => (/^(0|[1-9]\d*)$/.test(segment) ? Number(segment) : segment));
    const required = /^must have required property '(.*)'$/.exec(message);
    if (required !== null) return { message: 'required', path: [...path, required[1] as string] };
    const said = message
      .replace(/^must be equal to /, 'expected ')
      .replace(/^must be /, 'expected ')
      .replace(/^must NOT /, 'must not ');
    return path.length === 0 ? { message: said } : { message: said, path };
  });
}
