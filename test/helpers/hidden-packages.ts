/**
 * Makes installed packages look absent to Node's ESM resolver, for a child process that must run
 * as if an optional peer had never been installed:
 * `HIDDEN_PACKAGES=ai,langchain node --import tsx --import ./test/helpers/hidden-packages.ts …`.
 * Imported on the main thread it registers itself; on the hooks thread it is the resolve hook.
 * @module
 */

import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

const hidden = (process.env['HIDDEN_PACKAGES'] ?? '').split(',').filter((name) => name !== '');

interface ResolveContext {
  parentURL?: string;
}

/**
 * Node's resolve hook: a hidden package, or any path inside it, fails as Node fails a package that
 * is not installed (the same code and message).
 *
 * @example
 * // registered by importing this file with `--import`
 */
export async function resolve(
  specifier: string,
  context: ResolveContext,
  nextResolve: (specifier: string, context: ResolveContext) => Promise<unknown>,
): Promise<unknown> {
  const name = hidden.find(
    (hiddenName) => specifier === hiddenName || specifier.startsWith(`${hiddenName}/`),
  );
  if (name === undefined) return nextResolve(specifier, context);
  const error = new Error(
    `Cannot find package '${name}' imported from ${context.parentURL ?? 'the command line'}`,
  );
  throw Object.assign(error, { code: 'ERR_MODULE_NOT_FOUND' });
}

if (isMainThread) register(import.meta.url);
