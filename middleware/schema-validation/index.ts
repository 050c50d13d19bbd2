/**
 * Schema validation: args must satisfy the tool's schema before any attempt; the handler gets the parsed value.
 * @module
 */

import { DispatchError, describeThrown } from '../../src/errors.js';
import { optionKeys, optionsObject, requireInteger } from '../kit.js';
import { describeIssue, isThenable, parseJsonArgs } from '../internal-kit.js';
import { argsShapeProblem } from './args-shape.js';
import { trusted } from '../../src/internal/trusted.js';
import type { StandardSchemaV1 } from '../../src/standard-schema.js';
import type { DispatchContext, Middleware, Next } from '../../src/types.js';

/** Options for `schemaValidation`. */
export interface SchemaValidationOptions {
  /** How deeply args may nest before they are rejected unread. @default 64 */
  maxDepth?: number;
}

const schemaValidationOptionKeys = optionKeys<SchemaValidationOptions>({ maxDepth: true });

/**
 * Validates `ctx.args` with the tool's `inputSchema` and replaces them with the parsed value;
 * bad args fail with `schema` and 0 attempts, every issue listed with its path.
 *
 * @example
 * createDispatcher([errorMapping(), toolLookup(registry), schemaValidation()]);
 */
export function schemaValidation(options?: SchemaValidationOptions): Middleware {
  const { maxDepth = 64 } = optionsObject('schemaValidation', options, schemaValidationOptionKeys);
  requireInteger('maxDepth', maxDepth, 1);
  return trusted(function schemaValidation(ctx: DispatchContext, next: Next): Promise<void> {
    const { tool } = ctx;
    if (tool === undefined) {
      return Promise.reject(new DispatchError('internal', 'schemaValidation() must sit inside toolLookup()'));
    }
    const name = ctx.displayName;
    const refused = parseJsonArgs(ctx) ?? readableShapeProblem(name, ctx.args, maxDepth);
    if (refused !== undefined) return Promise.reject(refused);
    let validated: StandardSchemaV1.Result<unknown> | PromiseLike<StandardSchemaV1.Result<unknown>>;
    try {
      validated = tool.inputSchema['~standard'].validate(ctx.args);
    } catch (error) {
      return Promise.reject(validatorFailed(name, error));
    }
    // A validator that answers at once lets the attempt start in the dispatch's own turn; a
    // promise, from this realm or another (a vm context, a polyfill), is awaited.
    if (isThenable(validated)) return validatedLater(ctx, name, validated, next);
    const invalid = accept(ctx, name, validated);
    return invalid === undefined ? next() : Promise.reject(invalid);
  });
}

async function validatedLater(
  ctx: DispatchContext,
  name: string,
  validated: PromiseLike<StandardSchemaV1.Result<unknown>>,
  next: Next,
): Promise<void> {
  let result: StandardSchemaV1.Result<unknown>;
  try {
    result = await validated;
  } catch (error) {
    throw validatorFailed(name, error);
  }
  const invalid = accept(ctx, name, result);
  if (invalid !== undefined) throw invalid;
  await next();
}

// Takes the parsed args, or describes every issue with its path.
function accept(
  ctx: DispatchContext,
  name: string,
  result: StandardSchemaV1.Result<unknown>,
): DispatchError | undefined {
  if (result.issues !== undefined) return invalidArgs(name, result.issues.map(describeIssue).join('; '));
  ctx.args = result.value;
  return undefined;
}

function readableShapeProblem(toolName: string, args: unknown, maxDepth: number): DispatchError | undefined {
  let problem: string | undefined;
  try {
    problem = argsShapeProblem(args, maxDepth);
  } catch (error) {
    return invalidArgs(toolName, `they could not be read: ${describeThrown(error)}`, error);
  }
  return problem === undefined ? undefined : invalidArgs(toolName, problem);
}

function validatorFailed(toolName: string, error: unknown): DispatchError {
  return invalidArgs(toolName, `the validator failed: ${describeThrown(error)}`, error);
}

function invalidArgs(toolName: string, detail: string, cause?: unknown): DispatchError {
  return new DispatchError('schema', `Invalid args for "${toolName}": ${detail}`, { cause });
}
