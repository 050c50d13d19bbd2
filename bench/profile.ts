// A hot loop of default-stack dispatches to profile:
//   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile.ts [nokey|miss|hit] [dispatches] [--source | --library path]
// then summarize the profile with `npx tsx bench/profile-summary.ts /tmp/prof/<file>.cpuprofile`.

import { loadLibrary, loadOptionsFromArgv } from './library.js';
import { createStacks, smallArgs, toolNames } from './stacks.js';

const mode = process.argv[2] ?? 'nokey';
const count = Number(process.argv[3] ?? 300_000);
if (!['nokey', 'miss', 'hit'].includes(mode) || !Number.isInteger(count) || count < 1) {
  throw new TypeError('usage: bench/profile.ts [nokey|miss|hit] [dispatches]');
}

const { lib, origin } = await loadLibrary(loadOptionsFromArgv(process.argv));
const { ours } = createStacks(lib);
const start = process.hrtime.bigint();
for (let i = 0; i < count; i++) {
  const options = mode === 'nokey' ? undefined : { idempotencyKey: mode === 'hit' ? 'hit' : `miss-${i}` };
  const outcome = await ours.dispatch(toolNames.immediate, smallArgs, options);
  if (!outcome.ok) throw new Error(`dispatch failed: ${outcome.kind} ${outcome.message}`);
}
const ns = Number(process.hrtime.bigint() - start) / count;
process.stdout.write(`${mode} (${origin}): ${count} dispatches, ${(ns / 1_000).toFixed(2)} µs each\n`);
