// Summarizes a V8 .cpuprofile: self time by function and by file, biggest first.
//   npx tsx bench/profile-summary.ts profile.cpuprofile [rows]

import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, rowsArg] = process.argv.slice(2);
if (file === undefined) throw new TypeError('usage: bench/profile-summary.ts <file.cpuprofile> [rows]');
const rows = Number(rowsArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const shortUrl = (url: string) => url.replace(/^file:\/\/.*?\/(node_modules|src|middleware|bench)\//, '$1/');
const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0;
  if (us === 0) continue;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url === '' ? '(native)' : `${shortUrl(url)}:${lineNumber + 1}`;
  const fn = `${functionName || '(anonymous)'}  ${where}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  const fileKey = url === '' ? functionName : shortUrl(url);
  byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
}

const print = (title: string, map: Map<string, number>) => {
  process.stdout.write(`\n${title}\n`);
  for (const [name, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
    process.stdout.write(
      `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1_000).toFixed(0).padStart(6)} ms  ${name}\n`,
    );
  }
};
print('Self time by function', byFunction);
print('Self time by file (or native bucket)', byFile);
