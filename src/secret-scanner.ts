/**
 * The built-in secret scanner: the rows of `redact-patterns.ts`, searched in a few passes that
 * each start where their anchor is first found.
 * @module
 */

import { type BuiltinSecretPattern, builtinSecretPatterns, tokenCharacter } from './redact-patterns.js';

/** A literal whose place tells where a pass may first match: at it, less `offset`. */
interface Gate {
  readonly text: string;
  readonly offset: number;
}

/** Built-in rows searched in one pass. */
interface BuiltinPass {
  readonly gates: readonly Gate[];
  readonly regex: RegExp;
  /** Each row's name and group suffix. */
  readonly rows: readonly { readonly name: string; readonly suffix: string }[];
}

// A pass per anchor (the separators `-` and `_` share one), started where its anchor is first
// found: `indexOf` of a rare literal skips a text that has none at memory speed, where one
// alternation of every row tries each row at each position (ten times slower on plain text).
// Rows with a prefix share one lookbehind of all their prefixes, so an anchor in ordinary text
// (the `-` of a date) costs one check.
const builtinPasses: readonly BuiltinPass[] = passesOf(builtinSecretPatterns);
const longestGate = Math.max(...builtinPasses.flatMap(({ gates }) => gates.map(({ text }) => text.length)));

function passesOf(patterns: readonly BuiltinSecretPattern[]): BuiltinPass[] {
  type Member = { row: BuiltinSecretPattern; index: number };
  const groups = new Map<string, Map<string, Member[]>>();
  patterns.forEach((row, index) => {
    const key = row.anchor === '-' || row.anchor === '_' ? '-_' : row.anchor;
    const byAnchor = groups.get(key) ?? new Map<string, Member[]>();
    byAnchor.set(row.anchor, [...(byAnchor.get(row.anchor) ?? []), { row, index }]);
    groups.set(key, byAnchor);
  });
  return [...groups.values()].map((byAnchor) => ({
    gates: [...byAnchor.keys()].map(gateOf),
    regex: new RegExp([...byAnchor].map(([anchor, members]) => anchorBranch(anchor, members)).join('|'), 'g'),
    rows: [...byAnchor.values()].flat().map(({ row, index }) => ({ name: row.name, suffix: `_${index}` })),
  }));
}

// The anchor, then its rows: plain ones, and those with a prefix behind one shared lookbehind.
function anchorBranch(anchor: string, members: { row: BuiltinSecretPattern; index: number }[]): string {
  const literal = escapeRegExp(anchor);
  const alternatives: string[] = [];
  const prefixed: string[] = [];
  const prefixes: string[] = [];
  for (const { row, index } of members) {
    // Group names are made unique per row, so rows may share `secret` or a name.
    const suffix = `_${index}`;
    const pattern = uniqueGroups(row.pattern, suffix);
    if (row.prefix === undefined) {
      alternatives.push(`(?<row${suffix}>${pattern})`);
      continue;
    }
    prefixes.push(row.prefix);
    const prefix = uniqueGroups(row.prefix, suffix);
    prefixed.push(
      `(?<row${suffix}>(?<=(?<!${tokenCharacter})(?<from${suffix}>${prefix})${literal})${pattern})`,
    );
  }
  if (prefixed.length > 0) {
    alternatives.push(
      `(?<=(?<!${tokenCharacter})(?:${prefixes.join('|')})${literal})(?:${prefixed.join('|')})`,
    );
  }
  return `${literal}(?:${alternatives.join('|')})`;
}

// What to look for to find an anchor fast: `indexOf` stops wherever the first character it seeks
// is found, so it seeks from a capital on (`GIN` of `-----BEGIN`, `Key=` of `AccountKey=`): the
// last one that leaves three characters or more.
function gateOf(anchor: string): Gate {
  let offset = 0;
  for (let i = 1; i <= anchor.length - 3; i++) if (/[A-Z]/.test(anchor.charAt(i))) offset = i;
  return { text: anchor.slice(offset), offset };
}

function uniqueGroups(source: string, suffix: string): string {
  return source
    .replace(/\(\?<([A-Za-z_]\w*)>/g, `(?<$1${suffix}>`)
    .replace(/\\k<([A-Za-z_]\w*)>/g, `\\k<$1${suffix}>`);
}

function escapeRegExp(literal: string): string {
  return literal.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&');
}

// The text is searched for gates a piece at a time, so that the dozen searches of a piece find it
// in the processor's cache: a megabyte costs the same per character as a kilobyte.
const piece = 64 * 1024;

// Where a pass may first match in `text` from `from` on (a piece of it when it is long), or -1.
function firstGate(part: string, from: number, gates: readonly Gate[]): number {
  let first = -1;
  for (const { text, offset } of gates) {
    const at = part.indexOf(text);
    if (at !== -1 && (first === -1 || from + at - offset < first)) first = Math.max(0, from + at - offset);
  }
  return first;
}

// Where each pass may first match, or -1 where it cannot.
function passStarts(text: string): number[] {
  const starts: number[] = new Array(builtinPasses.length).fill(-1);
  return text.length <= piece ? startsInShortText(text, starts) : startsInLongText(text, starts);
}

// A long text is searched gate by gate, a piece at a time.
function startsInLongText(text: string, starts: number[]): number[] {
  let open = builtinPasses.length;
  for (let from = 0; from < text.length && open > 0; from += piece) {
    const part = text.slice(from, from + piece + longestGate - 1);
    for (let index = 0; index < builtinPasses.length; index++) {
      if (starts[index] !== -1) continue;
      const first = firstGate(part, from, (builtinPasses[index] as BuiltinPass).gates);
      if (first === -1) continue;
      starts[index] = first;
      open -= 1;
    }
  }
  return starts;
}

// A short text is searched once for every gate: most hold none, or one or two.
function startsInShortText(text: string, starts: number[]): number[] {
  let open = builtinPasses.length;
  anyGate.lastIndex = 0;
  for (let match = anyGate.exec(text); match !== null && open > 0; match = anyGate.exec(text)) {
    const at = match.index;
    // Every gate found here, not only the one the search stopped at.
    for (const { text: gate, offset, pass } of gatesByFirst.get(text.charAt(at)) ?? []) {
      if (starts[pass] !== -1 || !text.startsWith(gate, at)) continue;
      starts[pass] = Math.max(0, at - offset);
      open -= 1;
    }
    anyGate.lastIndex = at + 1;
  }
  return starts;
}

// Every gate, for one search of a short text, and each gate by its first character.
const gatesByFirst = new Map<string, { text: string; offset: number; pass: number }[]>();
builtinPasses.forEach(({ gates }, pass) => {
  for (const gate of gates) {
    const first = gate.text.charAt(0);
    gatesByFirst.set(first, [...(gatesByFirst.get(first) ?? []), { ...gate, pass }]);
  }
});
const anyGate = new RegExp(
  [...new Set(builtinPasses.flatMap(({ gates }) => gates.map(({ text }) => text)))]
    .map(escapeRegExp)
    .join('|'),
  'g',
);
// No secret is shorter (`://:x@`, the password of a URL with neither scheme nor user).
const shortestSecret = 6;

/** One secret found: `[start, end)` is replaced by the marker of `name`. */
interface Found {
  readonly start: number;
  readonly end: number;
  readonly name: string;
}

// Every match of one pass from `start`: the secret (the group `secret`, else the match with the
// prefix its `from` group saw) is what the marker replaces; what comes before it stays.
function findInPass(text: string, { regex, rows }: BuiltinPass, start: number, found: Found[]): void {
  regex.lastIndex = start;
  for (let match = regex.exec(text); match !== null; match = regex.exec(text)) {
    const groups = match.groups as Record<string, string | undefined>;
    const row = rows.find(({ suffix }) => groups[`row${suffix}`] !== undefined);
    if (row === undefined) continue;
    const end = match.index + match[0].length;
    const secret = groups[`secret${row.suffix}`];
    const from = groups[`from${row.suffix}`];
    found.push({
      start: secret === undefined ? match.index - (from?.length ?? 0) : end - secret.length,
      end,
      name: row.name,
    });
  }
}

/**
 * `text` with every built-in secret replaced by `[REDACTED:<name>]`. Where two overlap, both are
 * replaced by the marker of the one that starts first (the longer, at one place).
 * @internal
 */
export function redactBuiltinSecrets(text: string): string {
  if (text.length < shortestSecret) return text;
  const starts = passStarts(text);
  if (starts.every((start) => start === -1)) return text;
  const found: Found[] = [];
  for (let index = 0; index < builtinPasses.length; index++) {
    const start = starts[index] ?? -1;
    if (start !== -1) findInPass(text, builtinPasses[index] as BuiltinPass, start, found);
  }
  if (found.length === 0) return text;
  found.sort((a, b) => a.start - b.start || b.end - a.end);
  const parts: string[] = [];
  let kept = 0;
  for (const { start, end, name } of found) {
    // One inside another, or running past its end: the first marker stands for both.
    if (start < kept) {
      kept = Math.max(kept, end);
      continue;
    }
    parts.push(text.slice(kept, start), `[REDACTED:${name}]`);
    kept = end;
  }
  parts.push(text.slice(kept));
  return parts.join('');
}
