// What the engine's kept machinery buys: the default stack built with one piece replaced by its
// simplest version (or one piece of its work removed), each build measured per dispatch and in
// fan-out against the 8-worker pool.
//   npx tsx bench/ablate.ts [--processes 5]
// A variant is the tsc build of src/ and middleware/ after one source edit, which must apply (the
// script fails otherwise, so it cannot silently measure the unedited code). Every variant runs in
// processes of its own (bench/ablate-child.ts), the variants alternating, and the table shows the
// median of their per-process medians: the time per sequential dispatch against the unedited
// build's, and gatherBounded's throughput against the pool. The variants only measure; some break
// the contract.

import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Edit {
  file: string;
  find: string;
  replace: string;
}

const baseline = 'the default stack';

const variants: Record<string, Edit[]> = {
  [baseline]: [],
  // The deadline lists (src/internal/deadlines.ts) against one timer per deadline, set at once.
  'a timer per deadline': [
    {
      file: 'src/internal/limits.ts',
      find: '    if (this.#scheduler !== undefined) this.#scheduler.schedule(this);',
      replace: [
        '    if (this.#scheduler !== undefined) {',
        '      const timer = clock.setTimeout(() => this.expire(), this.ms);',
        '      this.#scheduler = { cancel: () => clock.clearTimeout(timer) } as unknown as DeadlineScheduler;',
        '    }',
      ].join('\n'),
    },
  ],
  // gatherBounded's promise-free workers against a pool that awaits each dispatch.
  'a promise per gathered call': [
    {
      file: 'src/dispatcher.ts',
      find: '      calls.startSafely(name, args, callOptions === undefined ? noOptions : callOptions, report),',
      replace:
        '      void dispatch(name, args, callOptions === undefined ? noOptions : callOptions).then(report),',
    },
  ],
  // The signals built on first read against one AbortController per limit and per attempt.
  'eager abort signals': [
    {
      file: 'src/internal/limits.ts',
      find: '    if (this.#watch(outer, limits.signal ?? base)) return;',
      replace: '    void this.signal;\n    if (this.#watch(outer, limits.signal ?? base)) return;',
    },
    {
      file: 'src/attempt.ts',
      find: "    else Object.defineProperty(this, 'signal', AttemptContext.#lazySignal);",
      replace:
        "    else {\n      Object.defineProperty(this, 'signal', AttemptContext.#lazySignal);\n      void this.signal;\n    }",
    },
  ],
  // compose's skip of the re-entry check for the library's own layers.
  'every layer watched': [
    {
      file: 'src/compose.ts',
      find: 'const watched = layers.map((layer) => !isTrusted(layer));',
      replace: 'const watched: boolean[] = layers.map((layer) => isTrusted(layer) || true);',
    },
  ],
  'without validating args': [
    {
      file: 'middleware/schema-validation/index.ts',
      find: "validated = tool.inputSchema['~standard'].validate(ctx.args);",
      replace: 'validated = { value: ctx.args } as typeof validated;',
    },
  ],
};

const root = fileURLToPath(new URL('..', import.meta.url));
const at = process.argv.indexOf('--processes');
const processes = at === -1 ? 5 : Number(process.argv[at + 1]);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

function build(name: string, edits: Edit[]): string {
  const work = mkdtempSync(join(tmpdir(), 'ablate-'));
  try {
    for (const entry of [
      'index.ts',
      'src',
      'middleware',
      'tsconfig.json',
      'tsconfig.build.json',
      'package.json',
    ]) {
      cpSync(join(root, entry), join(work, entry), { recursive: true });
    }
    symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'));
    for (const { file, find, replace } of edits) {
      const text = readFileSync(join(work, file), 'utf8');
      if (!text.includes(find)) throw new Error(`${name}: the edit of ${file} no longer applies`);
      writeFileSync(join(work, file), text.replace(find, replace));
    }
    const outDir = join(root, 'bench/.ablate', name.replaceAll(' ', '-'));
    rmSync(outDir, { recursive: true, force: true });
    const result = spawnSync(
      process.execPath,
      [
        tsc,
        '-p',
        'tsconfig.build.json',
        '--outDir',
        outDir,
        '--declaration',
        'false',
        '--declarationMap',
        'false',
        '--sourceMap',
        'false',
      ],
      { cwd: work, encoding: 'utf8' },
    );
    if (result.status !== 0) throw new Error(`${name}: tsc failed\n${result.stdout}${result.stderr}`);
    // tsconfig.build.json's root is the package's: the root index is the public face.
    return join(outDir, 'index.js');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const entries = Object.entries(variants).map(([name, edits]) => ({ name, entry: build(name, edits) }));
interface ChildResult {
  dispatchNs: number;
  fanOut: number;
}
const results = new Map<string, ChildResult[]>(entries.map(({ name }) => [name, []]));
for (let i = 0; i < processes; i++) {
  for (const { name, entry } of entries) {
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(root, 'bench/ablate-child.ts'), entry],
      { cwd: root, encoding: 'utf8' },
    );
    if (child.status !== 0) throw new Error(`${name}: ${child.stderr}`);
    const line = child.stdout.trim().split('\n').at(-1) ?? '';
    results.get(name)?.push(JSON.parse(line) as ChildResult);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;
const baseNs = median((results.get(baseline) ?? []).map((result) => result.dispatchNs));
process.stdout.write(
  `median of ${processes} processes each: ns per sequential dispatch (vs the default stack), gatherBounded / 8-worker pool\n`,
);
for (const [name, values] of results) {
  const ns = median(values.map((result) => result.dispatchNs));
  const fanOut = median(values.map((result) => result.fanOut));
  process.stdout.write(
    `${name.padEnd(30)} ${ns.toFixed(0).padStart(6)} ns (${(ns / baseNs).toFixed(3)}×)   fan-out ${fanOut.toFixed(3)}×\n`,
  );
}
