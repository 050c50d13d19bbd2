#!/usr/bin/env bash
# Packs the library and installs the tarball into empty folders: first with no host SDK at all
# (the root and the SDK-free subpaths must load, and the root must load no peer; a subpath or the
# bin that needs a missing peer must say so in one line, never with a stack), then with the peers a
# user would add, where every subpath must resolve at run time and with types. Last, the documented
# `npx … tool-dispatcher mcp-proxy` runs from an empty folder, with nothing installed or cached.
set -euo pipefail
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tarball=$(npm pack --silent --pack-destination "$work" | tail -n 1)

# The tarball as the type checker and the linter of package.json see it: arethetypeswrong and
# publint, strict (a warning fails). attw runs its esm-only profile: it does not model Node's
# require(esm), so it still lists "ESM (dynamic import only)" for CommonJS and node10 (pre-exports
# TypeScript) as ignored resolutions; a problem in any ESM or bundler resolution fails.
"$root/node_modules/.bin/attw" --profile esm-only "$work/$tarball" >"$work/attw.log" 2>&1 \
  || { cat "$work/attw.log"; echo 'pack check: arethetypeswrong found problems'; exit 1; }
"$root/node_modules/.bin/publint" run --strict "$work/$tarball" >"$work/publint.log" 2>&1 \
  || { cat "$work/publint.log"; echo 'pack check: publint found problems'; exit 1; }
grep -q 'All good' "$work/publint.log" || { cat "$work/publint.log"; echo 'pack check: publint did not say "All good"'; exit 1; }
echo 'pack check: arethetypeswrong and publint report nothing on the tarball'
# The console serves its page from the package: the built script and styles must be packed.
# (The listing is read whole first: `grep -q` quitting early would end tar with SIGPIPE, which
# pipefail reports as a failure.)
listing=$(tar -tzf "$work/$tarball")
for asset in app.js app.css; do
  grep -qx "package/dist/console-page/$asset" <<<"$listing" \
    || { echo "pack check: dist/console-page/$asset is not in the tarball (npm run build builds it)"; exit 1; }
done
echo 'pack check: the console page (dist/console-page/app.js, app.css) is packed'
tsc="$root/node_modules/typescript/bin/tsc"
version() { node -p "require('$root/package.json').devDependencies['$1'].replace(/^[~^]/, '')"; }
own_version=$(node -p "require('$root/package.json').version")

# `fails_in_one_line <what> <text it names> <command…>`: the command exits non-zero, its stderr has
# exactly one line that names <text> with an install command, and no stack frame at all (Node may
# frame an uncaught error with its own notice and version line; that is not ours to remove).
fails_in_one_line() {
  local what=$1 names=$2 status=0
  shift 2
  "$@" >/dev/null 2>"$work/stderr" || status=$?
  if [ "$status" -eq 0 ]; then echo "pack check: $what succeeded without $names"; exit 1; fi
  if [ "$(grep -cF -- "$names" "$work/stderr")" -ne 1 ] || ! grep -q 'npm install' "$work/stderr" \
    || grep -qE '^\s+at |ERR_MODULE_NOT_FOUND|Cannot find package' "$work/stderr"; then
    echo "pack check: $what did not fail in one line naming $names:"; cat "$work/stderr"; exit 1
  fi
}

# A tiny stdio MCP server in plain JavaScript (nothing to install): one tool, `echo`.
mkdir "$work/scripts"
cat > "$work/scripts/upstream.mjs" <<'JS'
import { createInterface } from 'node:readline';
const send = (message) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
const echo = { name: 'echo', description: 'Says the text back', inputSchema: {
  type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } };
createInterface({ input: process.stdin }).on('line', (line) => {
  const { id, method, params } = JSON.parse(line);
  if (id === undefined) return;
  if (method === 'initialize') {
    send({ id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} },
      serverInfo: { name: 'upstream', version: '1.0.0' } } });
  } else if (method === 'tools/list') send({ id, result: { tools: [echo] } });
  else if (method === 'tools/call') send({ id, result: { content: [{ type: 'text', text: params.arguments.text }] } });
  else send({ id, error: { code: -32601, message: `no method ${method}` } });
});
JS

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
for peer in openai @anthropic-ai/sdk ai langchain @langchain/core @openai/agents @modelcontextprotocol/sdk @opentelemetry/api redis ioredis pg \
  @restatedev/restate-sdk @dbos-inc/dbos-sdk; do
  if [ -e "node_modules/$peer" ]; then echo "pack check: $peer was installed without being asked for"; exit 1; fi
done
cat > consumer.ts <<'TS'
import { z } from 'zod';
import {
  ToolRegistry, createDispatcher, defaultStack, createBudget, DispatchError, TransientError, ToolError,
  isDispatchError, errorMapping, toolLookup, schemaValidation, budgetGuard, idempotency,
  concurrencyLimit, retry, timeout, circuitBreaker, logging, harnessStep, toToolMessage,
  type Outcome, type Middleware, type DispatchContext,
} from 'tool-dispatcher';
import {
  defaultStack as fromMiddleware, sleep, cancelled, memoryIdempotencyStore, compose, createNameMap,
  toObjectSchema, toJsonSafe,
} from 'tool-dispatcher/middleware';

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
# The OpenAI and Anthropic subpaths only use their SDKs' types, /redis and /postgres take any client
# through an adapter, /durable is engine-neutral and /console needs only node:http: they load
# without the SDKs.
cat > providers.mjs <<'JS'
const openai = await import('tool-dispatcher/openai');
const anthropic = await import('tool-dispatcher/anthropic');
const redis = await import('tool-dispatcher/redis');
const postgres = await import('tool-dispatcher/postgres');
const durable = await import('tool-dispatcher/durable');
const console_ = await import('tool-dispatcher/console');
if (typeof openai.createOpenAIToolkit !== 'function' || typeof anthropic.createAnthropicToolkit !== 'function'
  || typeof redis.fromNodeRedis !== 'function' || typeof postgres.postgresReceiptStore !== 'function'
  || typeof durable.engineVerdict !== 'function' || typeof console_.controlRoom !== 'function') {
  throw new Error('SDK-free subpaths');
}
console.log('pack check: tool-dispatcher/openai, /anthropic, /redis, /postgres, /durable and /console load without their SDKs');
JS
# A subpath that needs a missing peer fails its import with one line; caught, it is an error whose
# stack is that line, with the code Node's resolver uses.
cat > peerless.mjs <<'JS'
const needs = { 'ai-sdk': 'ai', langchain: 'langchain', 'openai-agents': '@openai/agents',
  otel: '@opentelemetry/api', restate: '@restatedev/restate-sdk',
  dbos: '@dbos-inc/dbos-sdk' };
for (const [subpath, peer] of Object.entries(needs)) {
  const error = await import(`tool-dispatcher/${subpath}`).then(() => undefined, (thrown) => thrown);
  const line = `Error: ${error?.message}`;
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || error.stack !== line || !line.includes(`"${peer}"`)
    || !line.includes('npm install')) {
    throw new Error(`tool-dispatcher/${subpath} without ${peer}: ${error?.stack}`);
  }
}
console.log('pack check: each subpath that needs a missing peer fails with one line naming it');
JS
# CommonJS: Node 20.19+ and 22.12+ load the package through require() (no shim in the way), with the
# same exports as import; a subpath whose entry awaits its peer is refused by Node itself.
cat > required.cjs <<'JS'
const root = require('tool-dispatcher');
const middleware = require('tool-dispatcher/middleware');
const redis = require('tool-dispatcher/redis');
Promise.all([import('tool-dispatcher'), import('tool-dispatcher/middleware')]).then(([importedRoot, importedMiddleware]) => {
  const same = (required, imported) => Object.keys(imported).every((name) => required[name] === imported[name]);
  if (!same(root, importedRoot) || !same(middleware, importedMiddleware) || typeof redis.fromNodeRedis !== 'function') {
    throw new Error('require() and import differ');
  }
  let refused;
  try { require('tool-dispatcher/otel'); } catch (error) { refused = error.code; }
  if (refused !== 'ERR_REQUIRE_ASYNC_MODULE') throw new Error(`require('tool-dispatcher/otel'): ${refused}`);
  console.log(`pack check: require('tool-dispatcher') works on Node ${process.version}, with the exports of import`);
});
JS
tsconfig consumer.ts
node "$tsc" -p tsconfig.json
node out/consumer.js
node providers.mjs
node required.cjs
node peerless.mjs
for needs in ai-sdk:ai langchain:langchain openai-agents:@openai/agents \
  otel:@opentelemetry/api restate:@restatedev/restate-sdk dbos:@dbos-inc/dbos-sdk; do
  fails_in_one_line "import 'tool-dispatcher/${needs%%:*}'" "\"${needs#*:}\"" \
    node --input-type=module --eval "import 'tool-dispatcher/${needs%%:*}';"
done
# The MCP subpath and the bin need no peer: the v2 MCP packages are dependencies.
node --input-type=module --eval "const mcp = await import('tool-dispatcher/mcp');
if (typeof mcp.createMcpServer !== 'function') throw new Error('tool-dispatcher/mcp');"
test "$(node_modules/.bin/tool-dispatcher --version)" = "$own_version" \
  || { echo 'pack check: tool-dispatcher --version is not the package version'; exit 1; }
node_modules/.bin/tool-dispatcher mcp-proxy --help >/dev/null 2>&1
# --redis-url is the one flag with a peer of its own (a Redis client): one line naming it.
fails_in_one_line 'mcp-proxy --redis-url' '"redis"' \
  node_modules/.bin/tool-dispatcher mcp-proxy --redis-url redis://127.0.0.1:1 -- node "$work/scripts/upstream.mjs"
echo 'pack check: with no SDK installed, tool-dispatcher/mcp loads and the bin answers --version and --help'

# 2. With the peers a user would add: every subpath resolves at run time and with types.
mkdir "$work/peers" && cd "$work/peers"
npm init -y >/dev/null
npm pkg set type=module >/dev/null
npm install --silent --no-audit --no-fund "$work/$tarball" zod \
  "openai@$(version openai)" "@anthropic-ai/sdk@$(version @anthropic-ai/sdk)" "ai@$(version ai)" @types/json-schema \
  "langchain@$(version langchain)" "@langchain/core@$(version @langchain/core)" "@openai/agents@$(version @openai/agents)" \
  "@modelcontextprotocol/sdk@$(version @modelcontextprotocol/sdk)" "@opentelemetry/api@$(version @opentelemetry/api)" \
  "redis@$(version redis)" "ioredis@$(version ioredis)" "pg@$(version pg)" \
  "@restatedev/restate-sdk@$(version @restatedev/restate-sdk)" "@dbos-inc/dbos-sdk@$(version @dbos-inc/dbos-sdk)" \
  >/dev/null 2>&1
cat > subpaths.ts <<'TS'
import { createOpenAIToolkit } from 'tool-dispatcher/openai';
import { createAnthropicToolkit } from 'tool-dispatcher/anthropic';
import { toAiSdkTools, ToolCallFailed } from 'tool-dispatcher/ai-sdk';
import { dispatcherMiddleware, toLangChainTools } from 'tool-dispatcher/langchain';
import { toAgentsTools } from 'tool-dispatcher/openai-agents';
import { createMcpServer, registerMcpTools, importMcpTools } from 'tool-dispatcher/mcp';
import { otelTracing, otelMetrics } from 'tool-dispatcher/otel';
import { fromNodeRedis, fromIoredis, redisIdempotencyStore, redisSlotStore, redisCircuitStore, redisBudget } from 'tool-dispatcher/redis';
import { postgresReceiptStore, receiptTableSql } from 'tool-dispatcher/postgres';
import { engineVerdict } from 'tool-dispatcher/durable';
import { restateRun } from 'tool-dispatcher/restate';
import { dbosStep } from 'tool-dispatcher/dbos';
import { controlRoom } from 'tool-dispatcher/console';

const all = [createOpenAIToolkit, createAnthropicToolkit, toAiSdkTools, ToolCallFailed, dispatcherMiddleware,
  toLangChainTools, toAgentsTools, createMcpServer, registerMcpTools, importMcpTools, otelTracing, otelMetrics,
  fromNodeRedis, fromIoredis, redisIdempotencyStore, redisSlotStore, redisCircuitStore, redisBudget,
  postgresReceiptStore, receiptTableSql, engineVerdict, restateRun, dbosStep, controlRoom];
if (all.some((f) => typeof f !== 'function')) throw new Error('a subpath export is missing');
console.log('pack check: every subpath resolves, with types, beside its peer');
TS
tsconfig subpaths.ts
node "$tsc" -p tsconfig.json
node out/subpaths.js
test -x node_modules/.bin/tool-dispatcher || { echo 'pack check: the tool-dispatcher bin is missing'; exit 1; }
node_modules/.bin/tool-dispatcher --help >/dev/null 2>&1
echo 'pack check: the tool-dispatcher bin runs'

# 3. The documented command, from an empty folder with nothing installed and an empty npm cache:
# npx installs the tarball and the SDK side by side. `--version`, then a short session: the proxy
# starts the plain-JS upstream, and a host's initialize, tools/list and tools/call come back through
# it; closing stdin stops it.
mkdir "$work/clean" && cd "$work/clean"
export npm_config_cache="$work/npm-cache"
proxy=(npx -y -p "$work/$tarball" tool-dispatcher)
test "$("${proxy[@]}" --version)" = "$own_version" \
  || { echo 'pack check: npx … tool-dispatcher --version is not the package version'; exit 1; }
cat > "$work/scripts/session.mjs" <<'JS'
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
const [command, ...args] = process.argv.slice(2);
const proxy = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
const fail = (why) => { console.error(`pack check: the proxy session ${why}`); proxy.kill('SIGKILL'); process.exit(1); };
// A hang guard only: a session takes a second or two once npx has the packages.
const guard = setTimeout(() => fail('hung'), 120_000);
const send = (message) => proxy.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
let answered = 0;
createInterface({ input: proxy.stdout }).on('line', (line) => {
  const { id, result, error } = JSON.parse(line);
  if (error !== undefined) fail(`got an error: ${line}`);
  if (id === 1) {
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/list' });
  } else if (id === 2) {
    if (!result.tools.some((tool) => tool.name === 'echo')) fail(`listed no echo tool: ${line}`);
    send({ id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'through the proxy' } } });
  } else if (id === 3) {
    if (result.content?.[0]?.text !== 'through the proxy' || result.isError) fail(`echoed wrong: ${line}`);
    proxy.stdin.end();
  }
  answered = Math.max(answered, id ?? 0);
});
proxy.on('exit', (code) => {
  clearTimeout(guard);
  if (answered !== 3 || code !== 0) fail(`ended with code ${code} after ${answered} of 3 answers`);
  console.log('pack check: npx … tool-dispatcher mcp-proxy serves an upstream from an empty folder');
});
send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {},
  clientInfo: { name: 'pack-check', version: '1.0.0' } } });
JS
node "$work/scripts/session.mjs" "${proxy[@]}" mcp-proxy -- node "$work/scripts/upstream.mjs"
test -z "$(ls -A "$work/clean")" || { echo 'pack check: npx left files in the empty folder'; exit 1; }
