// Loads the library under test: by default compiled by tsc, as the package ships it, not tsx's transform.
//
// Why: tsx transpiles with esbuild's `keepNames`, which wraps every function created at run time in
// a `__name(fn, "name")` call (an Object.defineProperty). The dispatcher creates several closures
// per dispatch, so measuring the TypeScript source through tsx adds a cost that users of the built
// package never pay, while the competitor libraries are measured as built JavaScript. `--source`
// measures the source through tsx anyway, to show that difference.

import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The public API of tool-dispatcher. */
export type Library = typeof import('../index.js');

/** Where the library came from. */
export interface LoadedLibrary {
  lib: Library;
  /** `build` (tsc output in bench/.build), `source` (TypeScript through tsx) or a given path. */
  origin: 'build' | 'source' | 'path';
  /** The URL of the loaded entry point: the integrations sit beside it, as in the package. */
  entry: string;
}

const root = fileURLToPath(new URL('..', import.meta.url));
/** Where `buildLibrary` writes the compiled library (ignored by git). */
export const buildDir = `${root}bench/.build`;
const builtEntry = `${buildDir}/index.js`;

/**
 * Compiles src/ and middleware/ with the project's `tsconfig.build.json` into bench/.build. A type
 * error elsewhere in the tree does not stop the benchmarks as long as tsc emitted the files.
 */
export function buildLibrary(): void {
  rmSync(buildDir, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(
    process.execPath,
    [
      tsc,
      '-p',
      'tsconfig.build.json',
      '--outDir',
      buildDir,
      '--declaration',
      'false',
      '--declarationMap',
      'false',
      '--sourceMap',
      'false',
    ],
    { cwd: root, encoding: 'utf8' },
  );
  if (!existsSync(builtEntry)) {
    throw new Error(`tsc produced no ${builtEntry}:\n${result.stdout}${result.stderr}`);
  }
  if (result.status !== 0) {
    process.stderr.write(`warning: tsc reported errors; benchmarking what it emitted\n${result.stdout}`);
  }
}

/** Options for `loadLibrary`. */
export interface LoadOptions {
  /** Run the TypeScript source through tsx instead of compiling it. */
  source?: boolean;
  /** Reuse bench/.build when it exists instead of compiling again. */
  prebuilt?: boolean;
  /** Load this compiled entry point instead (e.g. a candidate change built elsewhere). */
  path?: string | undefined;
}

/** The flags every bench script shares: `--source`, `--prebuilt`, `--library <path/to/index.js>`. */
export function loadOptionsFromArgv(argv: readonly string[]): LoadOptions {
  const at = argv.indexOf('--library');
  return {
    source: argv.includes('--source'),
    prebuilt: argv.includes('--prebuilt'),
    path: at === -1 ? undefined : argv[at + 1],
  };
}

/**
 * The library to benchmark: the tsc build (compiled now unless `prebuilt`), with `source` the
 * TypeScript source as tsx runs it, or with `path` a compiled entry point given by the caller.
 */
export async function loadLibrary(options: LoadOptions = {}): Promise<LoadedLibrary> {
  if (options.path !== undefined) {
    const url = pathToFileURL(
      options.path.startsWith('/') ? options.path : `${process.cwd()}/${options.path}`,
    );
    return { lib: (await import(url.href)) as Library, origin: 'path', entry: url.href };
  }
  if (options.source === true) {
    const entry = new URL('../index.js', import.meta.url).href;
    return { lib: (await import(entry)) as Library, origin: 'source', entry };
  }
  if (options.prebuilt !== true || !existsSync(builtEntry)) buildLibrary();
  const entry = pathToFileURL(builtEntry).href;
  return { lib: (await import(entry)) as Library, origin: 'build', entry };
}

/** The integrations a bench can load beside the library under test. */
export interface Integrations {
  otel: typeof import('../integrations/otel/index.js');
  openai: typeof import('../integrations/openai/index.js');
  redis: typeof import('../integrations/redis/index.js');
  postgres: typeof import('../integrations/postgres/index.js');
}

/**
 * Loads `integrations/<name>` from the same place as `loaded` (the tsc build, the source or the
 * given build), so an integration is measured on the same library code as the bare stack.
 */
export async function loadIntegration<Name extends keyof Integrations>(
  loaded: LoadedLibrary,
  name: Name,
): Promise<Integrations[Name]> {
  return (await import(new URL(`./integrations/${name}/index.js`, loaded.entry).href)) as Integrations[Name];
}
