/**
 * Schema validation: args must satisfy the tool's schema before any attempt; the handler gets the parsed value.
 * @module
 */

import { DispatchError, describeThrown } from '../../src/errors.js';
import { isThenable, parseJsonArgs, optionKeys, optionsObject, requireInteger } from '../kit.js';
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
  return createSchemaValidation(options).layer;
}

/**
 * A schema layer and its check (which validates and replaces `ctx.args`, a promise only for an
 * asynchronous validator), for the default stack's fast runner.
 * @internal
 */
export function createSchemaValidation(options?: SchemaValidationOptions): {
  layer: Middleware;
  check: (ctx: DispatchContext) => DispatchError | undefined | Promise<DispatchError | undefined>;
} {
  const { maxDepth = 64 } = optionsObject('schemaValidation', options, schemaValidationOptionKeys);
  requireInteger('maxDepth', maxDepth, 1);

  // Validates and replaces ctx.args: at once for a synchronous validator, with a promise only for
  // an asynchronous one (which the default stack's runner leaves to the onion).
  const check = (ctx: DispatchContext): DispatchError | undefined | Promise<DispatchError | undefined> => {
    const { tool } = ctx;
    if (tool === undefined) {
      return new DispatchError('internal', 'schemaValidation() must sit inside toolLookup()');
    }
    const name = ctx.displayName;
    let validated: StandardSchemaV1.Result<unknown> | PromiseLike<StandardSchemaV1.Result<unknown>>;
    let asynchronous: boolean;
    try {
      const badJson = parseJsonArgs(ctx);
      if (badJson !== undefined) return badJson;
      const problem = readableShapeProblem(name, ctx.args, maxDepth);
      if (problem !== undefined) return problem;
      validated = tool.inputSchema['~standard'].validate(ctx.args);
      // A promise from another realm (a vm context, a polyfill) fails `instanceof Promise`:
      // what makes a result asynchronous is being thenable.
      asynchronous = isThenable(validated);
    } catch (error) {
      return validatorFailed(name, error);
    }
    if (!asynchronous) return accept(ctx, name, validated as StandardSchemaV1.Result<unknown>);
    return new Promise<StandardSchemaV1.Result<unknown>>((resolve) => resolve(validated)).then(
      (result) => accept(ctx, name, result),
      (error: unknown) => validatorFailed(name, error),
    );
  };

  const layer = trusted(function schemaValidation(ctx: DispatchContext, next: Next): Promise<void> {
    const checked = check(ctx);
    if (checked === undefined) return next();
    if (!(checked instanceof Promise)) return Promise.reject(checked);
    return checked.then((problem) => (problem === undefined ? next() : Promise.reject(problem)));
  });
  return { layer, check };
}

// Takes the parsed args, or describes every issue with its path.
function accept(
  ctx: DispatchContext,
  toolName: string,
  result: StandardSchemaV1.Result<unknown>,
): DispatchError | undefined {
  if (result.issues !== undefined) return invalidArgs(toolName, result.issues.map(describeIssue).join('; '));
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

function describeIssue(issue: StandardSchemaV1.Issue): string {
  const path = (issue.path ?? []).map((segment) =>
    typeof segment === 'object' && segment !== null ? segment.key : segment,
  );
  if (path.length === 0) return issue.message;
  const where = path
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`))
    .join('');
  return `${where}: ${issue.message}`;
}
