// Where the fan-out time goes: the default stack built with one piece of its work removed at a
// time, each variant's gatherBounded against the 8-worker pool.
//   npx tsx bench/ablate.ts [--processes 5]
// A variant is the tsc build of src/ and middleware/ after one source edit, which must apply (the
// script fails otherwise, so it cannot silently measure the unedited code). Every variant runs in
// processes of its own (bench/ablate-child.ts), the variants alternating, and the table shows the
// median of their per-process median ratios. The variants break the contract; they only measure.

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

const variants: Record<string, Edit[]> = {
  'the default stack': [],
  'without validating args': [
    {
      file: 'middleware/schema-validation.ts',
      find: "validated = tool.inputSchema['~standard'].validate(ctx.args);",
      replace: 'validated = { value: ctx.args };',
    },
  ],
  'without the clock read': [
    { file: 'src/dispatcher.ts', find: '  return Date.now();', replace: '  return startedAtLoad;' },
    {
      file: 'src/dispatcher.ts',
      find: 'function readSystemClock(): number {',
      replace: 'const startedAtLoad = Date.now();\nfunction readSystemClock(): number {',
    },
  ],
  'without scheduling deadlines': [
    { file: 'middleware/timeout.ts', find: '    deadlines.schedule(attempt);\n', replace: '' },
  ],
};

const root = fileURLToPath(new URL('..', import.meta.url));
const at = process.argv.indexOf('--processes');
const processes = at === -1 ? 5 : Number(process.argv[at + 1]);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

function build(name: string, edits: Edit[]): string {
  const work = mkdtempSync(join(tmpdir(), 'ablate-'));
  try {
    for (const entry of ['src', 'middleware', 'tsconfig.json', 'tsconfig.build.json', 'package.json']) {
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
    return join(outDir, 'index.js');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const entries = Object.entries(variants).map(([name, edits]) => ({ name, entry: build(name, edits) }));
const ratios = new Map<string, number[]>(entries.map(({ name }) => [name, []]));
for (let i = 0; i < processes; i++) {
  for (const { name, entry } of entries) {
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(root, 'bench/ablate-child.ts'), entry],
      {
        cwd: root,
        encoding: 'utf8',
      },
    );
    if (child.status !== 0) throw new Error(`${name}: ${child.stderr}`);
    const line = child.stdout.trim().split('\n').at(-1) ?? '';
    ratios.get(name)?.push((JSON.parse(line) as { ratio: number }).ratio);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;
process.stdout.write(`gatherBounded throughput / 8-worker pool, median of ${processes} processes each\n`);
for (const [name, values] of ratios) {
  process.stdout.write(
    `${name.padEnd(32)} ${median(values).toFixed(3)}×  (${values.map((v) => v.toFixed(3)).join(' ')})\n`,
  );
}
