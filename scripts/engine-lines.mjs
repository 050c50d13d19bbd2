#!/usr/bin/env node
/**
 * Prints the engine's code lines (no blank lines, no comment lines): compose, the dispatcher and
 * its runner, the context, the attempt step, limits, deadlines, abort, failures, gather and the
 * default-stack preset.
 * @module
 */

import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The files the engine count covers under `root`, relative to it. */
export function engineFiles(root) {
  const preset = join(root, 'middleware/default-stack');
  return [
    'src/compose.ts',
    'src/dispatcher.ts',
    'src/stack-runner.ts',
    'src/context.ts',
    'src/attempt.ts',
    'src/internal/limits.ts',
    'src/internal/deadlines.ts',
    'src/internal/abort.ts',
    'src/internal/failures.ts',
    'src/gather.ts',
    ...(existsSync(preset) ? readdirSync(preset) : [])
      .filter((name) => name.endsWith('.ts'))
      .map((name) => `middleware/default-stack/${name}`),
  ].filter((file) => existsSync(join(root, file)));
}

/** Lines of `text` that are neither blank nor part of a comment. */
export function codeLines(text) {
  let inBlock = false;
  let count = 0;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (inBlock) {
      if (line.includes('*/')) {
        inBlock = false;
        if (line.slice(line.indexOf('*/') + 2).trim() !== '') count++;
      }
      continue;
    }
    if (line === '' || line.startsWith('//')) continue;
    if (line.startsWith('/*')) {
      if (!line.includes('*/')) inBlock = true;
      else if (line.slice(line.indexOf('*/') + 2).trim() !== '') count++;
      continue;
    }
    count++;
  }
  return count;
}

/** The engine's code lines under `root`, in total and per file. */
export function engineLines(root) {
  const files = engineFiles(root).map((file) => ({
    file,
    lines: codeLines(readFileSync(join(root, file), 'utf8')),
  }));
  return { total: files.reduce((sum, { lines }) => sum + lines, 0), files };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const root = args.find((arg) => !arg.startsWith('--')) ?? fileURLToPath(new URL('..', import.meta.url));
  const { total, files } = engineLines(root);
  if (args.includes('--files')) for (const { file, lines } of files) console.log(`${lines}\t${file}`);
  console.log(total);
}
