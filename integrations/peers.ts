/**
 * The integrations' optional peers: which are missing, how to install them, and the one-line
 * error a subpath fails with when its peer is not installed. A subpath's `entry.ts` (its run-time
 * face in package.json) loads the subpath through `importBesidePeers`, because a static import of
 * a missing package fails while Node links the module graph, before any code of ours could run.
 * @module
 */

import { readFileSync } from 'node:fs';

/**
 * The packages among `names` that cannot be found from this package (an installed package whose
 * exports hide its root still counts as found).
 *
 * @example
 * missingPeers(['@modelcontextprotocol/sdk']); // [] when it is installed
 */
export function missingPeers(names: readonly string[]): string[] {
  return names.filter((name) => {
    try {
      import.meta.resolve(name);
      return false;
    } catch (error) {
      return (error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND';
    }
  });
}

/**
 * The npm command that installs `names` within the ranges this package accepts, each quoted for
 * both POSIX shells and cmd.exe (a bare `^` is cmd's escape character).
 *
 * @example
 * installCommand(['ai']); // 'npm install "ai@^6 || ^7"'
 */
export function installCommand(names: readonly string[]): string {
  const manifest = ownManifest();
  // A dependency missing too (a broken or pruned install) is named with the range we declare.
  const ranges = { ...manifest?.dependencies, ...manifest?.peerDependencies };
  const specs = names.map((name) => (ranges[name] === undefined ? name : `"${name}@${ranges[name]}"`));
  return `npm install ${specs.join(' ')}`;
}

/**
 * The version of tool-dispatcher itself, from its package.json.
 *
 * @example
 * packageVersion(); // '0.1.0'
 */
export function packageVersion(): string {
  const version = ownManifest()?.version;
  if (version === undefined) throw new Error('tool-dispatcher cannot read its own package.json');
  return version;
}

/**
 * Runs `load` (the subpath's `import('./index.js')`); when it fails and one of `peers` is not
 * installed, throws an error of one line naming the missing packages and the command that
 * installs them. Any other failure is rethrown as it came.
 *
 * @param subpath - the subpath as users import it, e.g. `tool-dispatcher/ai-sdk`.
 * @param peers - every package the subpath needs at run time.
 * @example
 * export const { toAiSdkTools, ToolCallFailed } = await importBesidePeers('tool-dispatcher/ai-sdk', ['ai'], () =>
 *   import('./index.js'),
 * );
 */
export async function importBesidePeers<Module>(
  subpath: string,
  peers: readonly string[],
  load: () => Promise<Module>,
): Promise<Module> {
  try {
    return await load();
  } catch (error) {
    const missing = missingPeers(peers);
    if (missing.length === 0) throw error;
    throw peerError(`${subpath} needs ${packagesNamed(missing)}: ${installCommand(missing)}`);
  }
}

// `the package "ai"`, or `the packages "langchain" and "@langchain/core"`.
function packagesNamed(names: readonly string[]): string {
  const quoted = names.map((name) => `"${name}"`);
  const last = quoted.pop();
  return quoted.length === 0 ? `the package ${last}` : `the packages ${quoted.join(', ')} and ${last}`;
}

// Node prints an uncaught error through util.inspect: its stack (so the stack is the message
// alone, no frames), its cause and its enumerable fields (so neither a cause nor a visible
// `code`). The code stays what Node's resolver uses, for callers that feature-detect on it.
function peerError(message: string): Error {
  const error = new Error(message);
  error.stack = `Error: ${message}`;
  Object.defineProperty(error, 'code', { value: 'ERR_MODULE_NOT_FOUND', enumerable: false });
  return error;
}

interface Manifest {
  version?: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

// By the package's own name, so the same line finds it from dist/ and from the sources.
function ownManifest(): Manifest | undefined {
  try {
    const url = new URL(import.meta.resolve('tool-dispatcher/package.json'));
    return JSON.parse(readFileSync(url, 'utf8')) as Manifest;
  } catch {
    return undefined;
  }
}
