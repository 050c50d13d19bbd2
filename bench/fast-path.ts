// Whether a stack runs on the default stack's fast (fused) runner, asked of the library under test.
//
// The dispatcher picks a stack's runner once, in `stackRunner` (src/stack-runner.ts, not exported
// from the package): the registered group's fused runner when the stack ends with the preset's
// layers, otherwise the onion. This loads that module beside the loaded entry point (the tsc
// build, the source, or a given build with the same layout) and compares runners by name: a stack
// is on the fast path when it gets the runner the bare default stack gets, and the check is only
// trusted when the spliced stack (known to run the onion) gets another one. test/fused-stack.test.ts
// pins the same thing for the MCP proxy's shape.

import type { LoadedLibrary } from './library.js';
import type { Middleware } from '../index.js';

type StackRunnerModule = typeof import('../src/stack-runner.js');

/** The answer: `true`/`false`, or why the bench could not tell. */
export type FastPathAnswer = { fused: boolean } | { unknown: string };

/**
 * Whether `stack` runs fused, judged against `bare` (the default stack, fused) and `onion` (a
 * stack known to run the onion).
 */
export async function runsFused(
  library: LoadedLibrary,
  stacks: { stack: readonly Middleware[]; bare: readonly Middleware[]; onion: readonly Middleware[] },
): Promise<FastPathAnswer> {
  let module: StackRunnerModule;
  try {
    module = (await import(new URL('./src/stack-runner.js', library.entry).href)) as StackRunnerModule;
  } catch (error) {
    return { unknown: `no src/stack-runner.js beside ${library.entry}: ${String(error)}` };
  }
  const finish = (ctx: { outcome: unknown }) => ctx.outcome as never;
  const runner = (layers: readonly Middleware[]) => module.stackRunner(layers, finish).name;
  const fused = runner(stacks.bare);
  if (fused === '' || fused === runner(stacks.onion)) {
    return { unknown: 'the fused and onion runners cannot be told apart by name in this build' };
  }
  return { fused: runner(stacks.stack) === fused };
}
