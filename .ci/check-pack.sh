#!/usr/bin/env bash
# Packs the library, installs the tarball into an empty folder, and checks that its root import
# exposes the API at run time and with types.
set -euo pipefail
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tarball=$(npm pack --silent --pack-destination "$work" | tail -n 1)
cd "$work"
npm init -y >/dev/null
npm pkg set type=module >/dev/null
npm install --silent --no-audit --no-fund "./$tarball" zod >/dev/null

cat > consumer.ts <<'TS'
import { z } from 'zod';
import {
  ToolRegistry, createDispatcher, defaultStack, createBudget, DispatchError, TransientError,
  isDispatchError, errorMapping, toolLookup, schemaValidation, budgetGuard, idempotency,
  concurrencyLimit, retry, timeout, circuitBreaker, logging, harnessStep, toToolMessage, compose,
  type Outcome, type Middleware, type DispatchContext,
} from 'tool-dispatcher';

const registry = new ToolRegistry().register({
  name: 'math.add',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => a + b,
});
const audit: Middleware = async (ctx: DispatchContext, next) => { await next(); };
const dispatcher = createDispatcher([audit, ...defaultStack({ registry })]);
const outcome: Outcome = await dispatcher.dispatch('math.add', { a: 2, b: 3 }, { budget: createBudget(5) });
const bad = await dispatcher.dispatch('math.add', { a: 'x' });
const layers = [errorMapping, toolLookup, schemaValidation, budgetGuard, idempotency, concurrencyLimit,
  retry, timeout, circuitBreaker, logging, harnessStep, toToolMessage, compose];
if (!outcome.ok || outcome.result !== 5) throw new Error('dispatch failed');
if (!isDispatchError(bad) || bad.kind !== 'schema' || !(bad instanceof DispatchError)) throw new Error('envelope');
if (layers.some((f) => typeof f !== 'function') || typeof TransientError !== 'function') throw new Error('exports');
console.log('pack check: the installed package works');
TS
cat > tsconfig.json <<TS
{ "compilerOptions": { "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext",
  "strict": true, "outDir": "out", "skipLibCheck": false, "typeRoots": ["$root/node_modules/@types"],
  "types": ["node"] }, "files": ["consumer.ts"] }
TS
node "$root/node_modules/typescript/bin/tsc" -p tsconfig.json
node out/consumer.js
