/**
 * Output contracts: a success must satisfy its tool's `outputSchema`, else the call fails with
 * `tool_contract`.
 * @module
 */

import { DispatchError, describeThrown } from '../src/errors.js';
import type { StandardSchemaV1 } from '../src/standard-schema.js';
import type { DispatchContext } from '../src/types.js';

/**
 * Checks a success in `ctx.outcome` against `ctx.tool.outputSchema`: `undefined` when the tool
 * declares none, the call failed, or the result satisfies it. The result is kept as the handler
 * returned it; the envelope names the issues' paths, never the values.
 */
export async function checkContract(ctx: DispatchContext): Promise<DispatchError | undefined> {
  const schema = ctx.tool?.outputSchema;
  const { outcome } = ctx;
  if (schema === undefined || outcome?.ok !== true) return undefined;
  const name = ctx.displayName;
  let validated: StandardSchemaV1.Result<unknown>;
  try {
    validated = await schema['~standard'].validate(outcome.result);
  } catch (error) {
    return broken(name, outcome.attempts, `its validator failed (${describeThrown(error)})`);
  }
  return judge(name, outcome.attempts, validated);
}

function judge(
  name: string,
  attempts: number,
  result: StandardSchemaV1.Result<unknown>,
): DispatchError | undefined {
  if (result.issues === undefined) return undefined;
  const paths = [...new Set(result.issues.map(pathOf))];
  const shown = paths.slice(0, 10).join(', ') + (paths.length > 10 ? `, and ${paths.length - 10} more` : '');
  return broken(name, attempts, `at ${shown}`);
}

function broken(name: string, attempts: number, detail: string): DispatchError {
  return new DispatchError(
    'tool_contract',
    `"${name}" ran, but its result breaks its output schema ${detail}`,
    { attempts },
  );
}

function pathOf(issue: StandardSchemaV1.Issue): string {
  const path = (issue.path ?? []).map((segment) =>
    typeof segment === 'object' && segment !== null ? segment.key : segment,
  );
  if (path.length === 0) return '(the result)';
  return path
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`))
    .join('');
}
