// The run's surroundings (machine, versions) and how results are shown: a console table and docs/benchmarks.md.

import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import type { CaseResult, GroupResult, Ratio } from './harness.js';

/** Where and with what a run was made. */
export interface Environment {
  date: string;
  cpu: string;
  cores: number;
  memoryGiB: number;
  platform: string;
  node: string;
  v8: string;
  packages: Record<string, string>;
  /** Which form of tool-dispatcher was measured (see bench/library.ts). */
  library: string;
}

const root = fileURLToPath(new URL('..', import.meta.url));

/** The package versions actually installed, read from node_modules. */
export function installedVersions(names: readonly string[]): Record<string, string> {
  const versions: Record<string, string> = {};
  for (const name of names) {
    const path = name === 'tool-dispatcher' ? 'package.json' : `node_modules/${name}/package.json`;
    try {
      const manifest = JSON.parse(readFileSync(`${root}${path}`, 'utf8')) as { version?: unknown };
      versions[name] = String(manifest.version);
    } catch {
      versions[name] = 'not installed';
    }
  }
  return versions;
}

/** The machine, runtime and package versions of this run. */
export function environment(): Environment {
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    v8: process.versions.v8,
    packages: installedVersions([
      'tool-dispatcher',
      'zod',
      'cockatiel',
      'p-limit',
      'p-retry',
      'p-timeout',
      'tsx',
      'typescript',
    ]),
    library: 'unknown',
  };
}

/** A duration in ns, scaled to ns, µs or ms. */
export function formatNs(ns: number): string {
  if (!Number.isFinite(ns)) return 'n/a';
  if (ns < 1_000) return `${ns.toFixed(0)} ns`;
  if (ns < 1_000_000) return `${(ns / 1_000).toFixed(ns < 10_000 ? 2 : 1)} µs`;
  return `${(ns / 1_000_000).toFixed(2)} ms`;
}

/** A number with thin grouping, e.g. 1 234 567. */
export function formatCount(value: number): string {
  return Math.round(value).toLocaleString('en-US').replaceAll(',', ' ');
}

/** A ratio as `0.42×` (with its per-round quartiles when given). */
export function formatRatio(ratio: Ratio | number, withSpread = true): string {
  const digits = (value: number) => (value >= 10 ? value.toFixed(1) : value.toFixed(value >= 1 ? 2 : 3));
  if (typeof ratio === 'number') return `${digits(ratio)}×`;
  return withSpread
    ? `${digits(ratio.median)}× (IQR ${digits(ratio.q1)}–${digits(ratio.q3)})`
    : `${digits(ratio.median)}×`;
}

/** A number of round trips (a median over rounds, with its quartiles), e.g. `2.10 round trips (IQR 1.95–2.30)`. */
export function formatTrips(value: Ratio): string {
  return `${value.median.toFixed(2)} round trips (IQR ${value.q1.toFixed(2)}–${value.q3.toFixed(2)})`;
}

/** Calls per second from ns per operation and units per operation. */
export function throughput(result: CaseResult, at: number = result.wall.median): number {
  return (result.unitsPerOp * 1e9) / at;
}

/** The table columns of a group. */
export type Column = 'wall' | 'cpu' | 'throughput';

/** Rows of a markdown table for a group. */
export function markdownTable(group: GroupResult, columns: readonly Column[]): string {
  const head = ['case', ...columns.flatMap(headerOf), 'spread (IQR/median)', 'ops per batch × rounds'];
  const lines = [
    `| ${head.join(' | ')} |`,
    `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`,
  ];
  for (const c of group.cases) {
    const cells = [c.label, ...columns.flatMap((column) => cellsOf(c, column))];
    cells.push(`±${(c.wall.relIqr * 50).toFixed(1)}%`, `${formatCount(c.opsPerBatch)} × ${group.rounds}`);
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function headerOf(column: Column): string[] {
  switch (column) {
    case 'wall':
      return ['median per op', 'q1 – q3'];
    case 'cpu':
      return ['CPU per op (median)'];
    case 'throughput':
      return ['calls/s (median)', 'per call'];
  }
}

function cellsOf(c: CaseResult, column: Column): string[] {
  switch (column) {
    case 'wall':
      return [formatNs(c.wall.median), `${formatNs(c.wall.q1)} – ${formatNs(c.wall.q3)}`];
    case 'cpu':
      return [formatNs(c.cpu.median)];
    case 'throughput':
      return [formatCount(throughput(c)), formatNs(c.wall.median / c.unitsPerOp)];
  }
}

/** A plain-text table for the console. */
export function consoleTable(title: string, group: GroupResult, columns: readonly Column[]): string {
  const rows = group.cases.map((c) => [
    c.label,
    ...columns.flatMap((column) => cellsOf(c, column)),
    `±${(c.wall.relIqr * 50).toFixed(1)}%`,
  ]);
  const head = ['case', ...columns.flatMap(headerOf), 'spread'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('  ');
  return [title, line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
