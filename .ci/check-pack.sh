#!/usr/bin/env bash
# Packs the library and installs the tarball into empty folders: first with no host SDK at all
# (the root and the SDK-free subpaths must load, and the root must load no peer), then with the
# peers a user would add, where every subpath must resolve at run time and with types.
set -euo pipefail
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tarball=$(npm pack --silent --pack-destination "$work" | tail -n 1)
tsc="$root/node_modules/typescript/bin/tsc"
version() { node -p "require('$root/package.json').devDependencies['$1'].replace(/^[~^]/, '')"; }

tsconfig() {
  cat > tsconfig.json <<TS
{ "compilerOptions": { "target": "ES2022", "module": "NodeNext", "moduleResolution": "NodeNext",
  "strict": true, "outDir": "out", "skipLibCheck": false, "typeRoots": ["$root/node_modules/@types"],
  "types": ["node"] }, "files": ["$1"] }
TS
}

# 1. No peers: the root and the middleware subpath, with types; the root loads no peer.
mkdir "$work/bare" && cd "$work/bare"
npm init -y >/dev/null
npm pkg set type=module >/dev/null
npm install --silent --no-audit --no-fund "$work/$tarball" zod >/dev/null
for peer in openai @anthropic-ai/sdk ai langchain @langchain/core @openai/agents @modelcontextprotocol/sdk @opentelemetry/api redis ioredis; do
  if [ -e "node_modules/$peer" ]; then echo "pack check: $peer was installed without being asked for"; exit 1; fi
done
cat > consumer.ts <<'TS'
import { z } from 'zod';
import {
  ToolRegistry, createDispatcher, defaultStack, createBudget, DispatchError, TransientError, ToolError,
  isDispatchError, errorMapping, toolLookup, schemaValidation, budgetGuard, idempotency,
  concurrencyLimit, retry, timeout, circuitBreaker, logging, harnessStep, toToolMessage, compose,
  createNameMap, toObjectSchema, toJsonSafe,
  type Outcome, type Middleware, type DispatchContext,
} from 'tool-dispatcher';
import { defaultStack as fromMiddleware, sleep, cancelled, memoryIdempotencyStore } from 'tool-dispatcher/middleware';

const registry = new ToolRegistry().register({
  name: 'math.add',
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  handler: ({ a, b }) => a + b,
});
const audit: Middleware = async (ctx: DispatchContext, next) => { await next(); };
const dispatcher = createDispatcher([audit, ...defaultStack({ registry })]);
const outcome: Outcome = await dispatcher.dispatch('math.add', { a: 2, b: 3 }, { budget: createBudget(5) });
const bad = await dispatcher.dispatch('math.add', { a: 'x' });
const json = await dispatcher.dispatchJson('math.add', '{"a":1,"b":2}');
const layers = [errorMapping, toolLookup, schemaValidation, budgetGuard, idempotency, concurrencyLimit,
  retry, timeout, circuitBreaker, logging, harnessStep, toToolMessage, compose, createNameMap, toObjectSchema,
  toJsonSafe, fromMiddleware, sleep, cancelled, memoryIdempotencyStore];
if (!outcome.ok || outcome.result !== 5 || !json.ok) throw new Error('dispatch failed');
if (!isDispatchError(bad) || bad.kind !== 'schema' || !(bad instanceof DispatchError)) throw new Error('envelope');
if (layers.some((f) => typeof f !== 'function') || typeof TransientError !== 'function' || typeof ToolError !== 'function') {
  throw new Error('exports');
}
console.log('pack check: the installed package works without any host SDK');
TS
# The OpenAI and Anthropic subpaths only use their SDKs' types: they load without the SDKs.
cat > providers.mjs <<'JS'
const openai = await import('tool-dispatcher/openai');
const anthropic = await import('tool-dispatcher/anthropic');
if (typeof openai.createOpenAIToolkit !== 'function' || typeof anthropic.createAnthropicToolkit !== 'function') {
  throw new Error('provider subpaths');
}
console.log('pack check: tool-dispatcher/openai and /anthropic load without their SDKs');
JS
tsconfig consumer.ts
node "$tsc" -p tsconfig.json
node out/consumer.js
node providers.mjs

# 2. With the peers a user would add: every subpath resolves at run time and with types.
mkdir "$work/peers" && cd "$work/peers"
npm init -y >/dev/null
npm pkg set type=module >/dev/null
npm install --silent --no-audit --no-fund "$work/$tarball" zod \
  "openai@$(version openai)" "@anthropic-ai/sdk@$(version @anthropic-ai/sdk)" "ai@$(version ai)" @types/json-schema \
  "langchain@$(version langchain)" "@langchain/core@$(version @langchain/core)" "@openai/agents@$(version @openai/agents)" \
  "@modelcontextprotocol/sdk@$(version @modelcontextprotocol/sdk)" "@opentelemetry/api@$(version @opentelemetry/api)" \
  "redis@$(version redis)" "ioredis@$(version ioredis)" >/dev/null 2>&1
cat > subpaths.ts <<'TS'
import { createOpenAIToolkit } from 'tool-dispatcher/openai';
import { createAnthropicToolkit } from 'tool-dispatcher/anthropic';
import { toAiSdkTools, ToolCallFailed } from 'tool-dispatcher/ai-sdk';
import { dispatcherMiddleware, toLangChainTools } from 'tool-dispatcher/langchain';
import { toAgentsTools } from 'tool-dispatcher/openai-agents';
import { createMcpServer, registerMcpTools, importMcpTools } from 'tool-dispatcher/mcp';
import { otelTracing, otelMetrics } from 'tool-dispatcher/otel';
import { fromNodeRedis, fromIoredis, redisIdempotencyStore, redisSlotStore, redisCircuitStore, redisBudget } from 'tool-dispatcher/redis';

const all = [createOpenAIToolkit, createAnthropicToolkit, toAiSdkTools, ToolCallFailed, dispatcherMiddleware,
  toLangChainTools, toAgentsTools, createMcpServer, registerMcpTools, importMcpTools, otelTracing, otelMetrics,
  fromNodeRedis, fromIoredis, redisIdempotencyStore, redisSlotStore, redisCircuitStore, redisBudget];
if (all.some((f) => typeof f !== 'function')) throw new Error('a subpath export is missing');
console.log('pack check: every subpath resolves, with types, beside its peer');
TS
tsconfig subpaths.ts
node "$tsc" -p tsconfig.json
node out/subpaths.js
test -x node_modules/.bin/tool-dispatcher || { echo 'pack check: the tool-dispatcher bin is missing'; exit 1; }
node_modules/.bin/tool-dispatcher --help >/dev/null 2>&1
echo 'pack check: the tool-dispatcher bin runs'
