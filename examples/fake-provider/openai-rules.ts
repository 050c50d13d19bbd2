// OpenAI's request checks the fake provider enforces, with the error texts the real API sends.

import type { HttpReply } from './http.js';

/** OpenAI's tool-name rule. */
export const openaiNamePattern = /^[a-zA-Z0-9_-]+$/;
const maxNameLength = 64;

/** An OpenAI 400 in the documented `{ error: { message, type, param, code } }` shape. */
export function openaiError(
  message: string,
  param: string | null = null,
  code: string | null = null,
): HttpReply {
  return { status: 400, body: { error: { message, type: 'invalid_request_error', param, code } } };
}

/** The 400 for a tool name that breaks the pattern or the length, at `param`; or `undefined`. */
export function nameProblem(name: unknown, param: string): HttpReply | undefined {
  if (typeof name !== 'string')
    return openaiError(
      `Invalid type for '${param}': expected a string, but got ${typeof name} instead.`,
      param,
      'invalid_type',
    );
  if (name.length > maxNameLength) {
    return openaiError(
      `Invalid '${param}': string too long. Expected a string with maximum length ${maxNameLength}, but got a string with length ${name.length} instead.`,
      param,
      'string_above_max_length',
    );
  }
  if (!openaiNamePattern.test(name)) {
    return openaiError(
      `Invalid '${param}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
      param,
      'invalid_value',
    );
  }
  return undefined;
}

/** The 400 for a function's parameters schema (a root object; strict mode's subset when `strict`), or `undefined`. */
export function schemaProblem(
  name: string,
  parameters: unknown,
  strict: boolean,
  param: string,
): HttpReply | undefined {
  if (parameters === undefined || parameters === null) return undefined;
  const schema = parameters as Record<string, unknown>;
  if (typeof schema !== 'object' || schema['type'] !== 'object') {
    const got = typeof schema === 'object' && typeof schema['type'] === 'string' ? schema['type'] : 'None';
    return openaiError(
      `Invalid schema for function '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${got}"'.`,
      param,
      'invalid_function_parameters',
    );
  }
  if (!strict) return undefined;
  const problem = strictProblem(schema, []);
  return problem === undefined
    ? undefined
    : openaiError(`Invalid schema for function '${name}': ${problem}`, param, 'invalid_function_parameters');
}

// Strict mode (Structured Outputs): every object closed and every property required, anyOf only
// nested, no composition keywords the subset leaves out.
function strictProblem(schema: unknown, path: string[]): string | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const node = schema as Record<string, unknown>;
  const context = `In context=(${path.map((part) => `'${part}'`).join(', ')}${path.length === 1 ? ',' : ''})`;
  for (const keyword of [
    'allOf',
    'not',
    'if',
    'then',
    'else',
    'dependentRequired',
    'dependentSchemas',
    'patternProperties',
    'oneOf',
  ]) {
    if (keyword in node) return `${context}, '${keyword}' is not permitted.`;
  }
  if (path.length === 0 && 'anyOf' in node) return `${context}, 'anyOf' is not permitted at the root.`;
  const types = Array.isArray(node['type']) ? node['type'] : [node['type']];
  if (types.includes('object')) {
    if (node['additionalProperties'] !== false) {
      return `${context}, 'additionalProperties' is required to be supplied and to be false.`;
    }
    const properties = (node['properties'] ?? {}) as Record<string, unknown>;
    const required = Array.isArray(node['required']) ? (node['required'] as unknown[]) : [];
    const missing = Object.keys(properties).filter((key) => !required.includes(key));
    if (missing.length > 0) {
      return `${context}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing[0]}'.`;
    }
    for (const [key, value] of Object.entries(properties)) {
      const problem = strictProblem(value, [...path, 'properties', key]);
      if (problem !== undefined) return problem;
    }
  }
  if ('items' in node) {
    const problem = strictProblem(node['items'], [...path, 'items']);
    if (problem !== undefined) return problem;
  }
  for (const key of ['anyOf'] as const) {
    const list = node[key];
    if (!Array.isArray(list)) continue;
    for (const [index, item] of list.entries()) {
      const problem = strictProblem(item, [...path, key, String(index)]);
      if (problem !== undefined) return problem;
    }
  }
  for (const defsKey of ['$defs', 'definitions'] as const) {
    const defs = node[defsKey];
    if (typeof defs !== 'object' || defs === null) continue;
    for (const [key, value] of Object.entries(defs)) {
      const problem = strictProblem(value, [...path, defsKey, key]);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}
