// Regression: every factory silently ignored a key it does not take, so one letter turned a
// promise off — `defaultStack({ approvals: gate })`, the spelling every host bridge uses, ran
// refunds without approval. `approvals` is now the one spelling (defaultStack's old `approval`
// still works), and every factory and options object throws a TypeError naming the nearest key.

import { Client } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { approvalGate, createDispatcher, createRedactor, defaultStack, ToolRegistry } from '../../index.js';
import { createAnthropicToolkit } from '../../integrations/anthropic/index.js';
import { toAiSdkTools } from '../../integrations/ai-sdk/index.js';
import { controlRoom } from '../../integrations/console/index.js';
import { dbosStep } from '../../integrations/dbos/index.js';
import { dispatcherMiddleware, toLangChainTools } from '../../integrations/langchain/index.js';
import {
  createMcpProxy,
  createMcpServer,
  importMcpTools,
  registerMcpTools,
  toMcpTools,
} from '../../integrations/mcp/index.js';
// Not on tool-dispatcher/mcp's face yet (issue 31, item 25).
import { listenMcp } from '../../integrations/mcp/listener.js';
import { createOpenAIToolkit } from '../../integrations/openai/index.js';
import { toAgentsTools } from '../../integrations/openai-agents/index.js';
import { otelMetrics, otelTracing } from '../../integrations/otel/index.js';
import { postgresReceiptStore } from '../../integrations/postgres/index.js';
import {
  redisApprovalStore,
  redisAutopilotStore,
  redisBudget,
  redisCircuitStore,
  redisIdempotencyStore,
  redisRateStore,
  redisSlotStore,
  redisWindowStore,
  type StoreClient,
} from '../../integrations/redis/index.js';
import { restateRun } from '../../integrations/restate/index.js';
import {
  approvalGate as gateLayer,
  circuitBreaker,
  concurrencyLimit,
  idempotency,
  logging,
  memoryApprovalStore,
  memoryCircuitStore,
  memoryIdempotencyStore,
  memoryRateStore,
  memoryReceiptStore,
  memorySlotStore,
  memorySpillStore,
  memoryWindowStore,
  outputGuard,
  rateLimit,
  retry,
  schemaValidation,
  timeout,
  windowedBudget,
} from '../../middleware/index.js';
import { createNameMap } from '../../src/name-map.js';
import { refundRegistry } from '../helpers/refunds.js';

// What plain JavaScript (or a spread of a wider object) hands a factory: the compiler cannot see it.
const untyped = (value: object): never => value as never;

const refunds: number[] = [];
const registry = refundRegistry(refunds);
const dispatcher = createDispatcher(defaultStack({ registry }));
// Our own store seam, never called: each factory rejects its options before it talks to Redis.
const redis: StoreClient = {
  evalScript: () => Promise.reject(new Error('not called')),
} as unknown as StoreClient;
const pool = { query: () => Promise.reject(new Error('not called')) };
const info = { name: 'billing', version: '1.0.0' };

describe('defaultStack and the approval gate', () => {
  it('gates a refund given as defaultStack({ approvals: gate }), the bridges’ spelling', async () => {
    const ran: number[] = [];
    const gated = refundRegistry(ran);
    const gate = approvalGate({ registry: gated });
    const guarded = createDispatcher(defaultStack(untyped({ registry: gated, approvals: gate })));
    const outcome = await guarded.dispatch('payments.refund', { amount: 500 });
    expect(outcome.ok ? 'ran' : outcome.kind).toBe('approval_required');
    expect(ran).toEqual([]);
  });

  it('still gates a refund given the old spelling, defaultStack({ approval: gate })', async () => {
    const ran: number[] = [];
    const gated = refundRegistry(ran);
    const guarded = createDispatcher(
      defaultStack({ registry: gated, approval: approvalGate({ registry: gated }) }),
    );
    const outcome = await guarded.dispatch('payments.refund', { amount: 500 });
    expect(outcome.ok ? 'ran' : outcome.kind).toBe('approval_required');
    expect(ran).toEqual([]);
  });

  it('refuses two different gates under the two spellings', () => {
    const one = approvalGate({ registry });
    const other = approvalGate({ registry });
    expect(() => defaultStack({ registry, approvals: one, approval: other })).toThrow(TypeError);
  });
});

// [what is called, the call with one misspelt key, the key the message must suggest]
const nearMisses: ReadonlyArray<readonly [string, () => unknown, string]> = [
  ['createDispatcher', () => createDispatcher([], untyped({ onEvents: () => {} })), 'onEvent'],
  ['defaultStack', () => defaultStack(untyped({ registry, timeouts: {} })), 'timeout'],
  [
    'defaultStack retry: {…}',
    () => defaultStack(untyped({ registry, retry: { maxAttempt: 2 } })),
    'maxAttempts',
  ],
  [
    'ToolRegistry.register (the tool)',
    () =>
      new ToolRegistry().register(
        untyped({
          name: 'a.b',
          inputSchema: registry.get('payments.refund')?.inputSchema,
          handler: () => 1,
          idempotant: true,
        }),
      ),
    'idempotent',
  ],
  [
    'ToolRegistry.register (its options)',
    () =>
      new ToolRegistry().register(untyped(registry.get('payments.refund') ?? {}), untyped({ overide: true })),
    'override',
  ],
  ['createRedactor', () => createRedactor(untyped({ pattern: [] })), 'patterns'],
  ['createNameMap', () => createNameMap([], untyped({ maxlength: 10 })), 'maxLength'],
  ['gatherBounded', () => dispatcher.gatherBounded([], untyped({ concurency: 2 })), 'concurrency'],
  ['schemaValidation', () => schemaValidation(untyped({ maxDepht: 3 })), 'maxDepth'],
  ['idempotency', () => idempotency(untyped({ ttl: 5 })), 'ttlMs'],
  ['concurrencyLimit', () => concurrencyLimit(untyped({ maxQueued: 2 })), 'maxQueue'],
  ['retry', () => retry(untyped({ maxAttempt: 2 })), 'maxAttempts'],
  ['timeout', () => timeout(untyped({ defaultMS: 5 })), 'defaultMs'],
  ['logging', () => logging(untyped({ logger: console, levle: 'info' })), 'level'],
  ['circuitBreaker', () => circuitBreaker(untyped({ failureTreshold: 3 })), 'failureThreshold'],
  ['rateLimit', () => rateLimit(untyped({ rate: 1, intervalMS: 10 })), 'intervalMs'],
  ['windowedBudget', () => windowedBudget(untyped({ limit: 1, windowMs: 10, stor: {} })), 'store'],
  ['approvalGate', () => gateLayer(untyped({ registry, fallbak: 'allow' })), 'fallback'],
  ['outputGuard', () => outputGuard(untyped({ maxChar: 10 })), 'maxChars'],
  ['memoryIdempotencyStore', () => memoryIdempotencyStore(untyped({ maxEntires: 5 })), 'maxEntries'],
  ['memoryReceiptStore', () => memoryReceiptStore(untyped({ tllMs: 5 })), 'ttlMs'],
  ['memorySlotStore', () => memorySlotStore(untyped({ pools: 'x' })), 'pool'],
  ['memoryCircuitStore', () => memoryCircuitStore(untyped({ clok: {} })), 'clock'],
  ['memoryRateStore', () => memoryRateStore(untyped({ clocks: {} })), 'clock'],
  ['memoryWindowStore', () => memoryWindowStore(untyped({ clck: {} })), 'clock'],
  ['memoryApprovalStore', () => memoryApprovalStore(untyped({ maxEntires: 5 })), 'maxEntries'],
  ['memorySpillStore', () => memorySpillStore(untyped({ ttl: 5 })), 'ttlMs'],
  [
    'createOpenAIToolkit',
    () => createOpenAIToolkit(untyped({ registry, dispatcher, scrict: true })),
    'strict',
  ],
  [
    'createOpenAIToolkit run options',
    () =>
      createOpenAIToolkit({ registry, dispatcher }).runChatToolCalls(
        untyped({ role: 'assistant', tool_calls: [] }),
        untyped({ aprovals: {} }),
      ),
    'approvals',
  ],
  [
    'createAnthropicToolkit',
    () => createAnthropicToolkit(untyped({ registry, dispatcher, keyByCallID: true })),
    'keyByCallId',
  ],
  [
    'createAnthropicToolkit runnableTools',
    () => createAnthropicToolkit({ registry, dispatcher }).runnableTools(untyped({ timeoutMS: 5 })),
    'timeoutMs',
  ],
  [
    'toAiSdkTools',
    () => toAiSdkTools(untyped({ registry, dispatcher, approval: approvalGate({ registry }) })),
    'approvals',
  ],
  [
    'toAgentsTools',
    () => toAgentsTools(untyped({ registry, dispatcher, onOutcomes: () => {} })),
    'onOutcome',
  ],
  [
    'dispatcherMiddleware',
    () => dispatcherMiddleware(untyped({ registry, dispatcher, approval: approvalGate({ registry }) })),
    'approvals',
  ],
  [
    'toLangChainTools',
    () => toLangChainTools(untyped({ registry, dispatcher, idempotencyScop: 'r' })),
    'idempotencyScope',
  ],
  [
    'createMcpServer',
    () => createMcpServer(untyped({ registry, dispatcher, info, approval: approvalGate({ registry }) })),
    'approvals',
  ],
  [
    'createMcpServer tasks: {…}',
    () => createMcpServer(untyped({ registry, dispatcher, info, tasks: { pollIntervalMS: 5 } })),
    'pollIntervalMs',
  ],
  [
    'createMcpServer hints',
    () =>
      createMcpServer(
        untyped({ registry, dispatcher, info, hints: { 'payments.refund': { readonlyHint: true } } }),
      ),
    'readOnlyHint',
  ],
  [
    'registerMcpTools',
    () =>
      registerMcpTools(
        new Server(info, { capabilities: {} }),
        untyped({ registry, dispatcher, pagesize: 5 }),
      ),
    'pageSize',
  ],
  ['toMcpTools', () => toMcpTools(untyped({ registry, hint: {} })), 'hints'],
  [
    'importMcpTools',
    () =>
      importMcpTools(
        new Client({ name: 'host', version: '1.0.0' }),
        new ToolRegistry(),
        untyped({ prefx: 'gh' }),
      ),
    'prefix',
  ],
  [
    'createMcpProxy',
    () => createMcpProxy(untyped({ upstream: { command: 'node' }, logLevle: 'info' })),
    'logLevel',
  ],
  [
    'listenMcp',
    () =>
      listenMcp(
        () => new Server(info, { capabilities: {} }),
        untyped({ url: 'http://127.0.0.1:0/mcp', allowedOrigin: [] }),
      ),
    'allowedOrigins',
  ],
  ['otelTracing', () => otelTracing(untyped({ recordArgument: true })), 'recordArguments'],
  ['otelMetrics', () => otelMetrics(untyped({ metre: {} })), 'meter'],
  ['redisIdempotencyStore', () => redisIdempotencyStore(redis, untyped({ preffix: 'x' })), 'prefix'],
  ['redisSlotStore', () => redisSlotStore(redis, untyped({ pool: 'p', max: 1, leasMs: 5 })), 'leaseMs'],
  ['redisCircuitStore', () => redisCircuitStore(redis, untyped({ idleTtl: 5 })), 'idleTtlMs'],
  ['redisApprovalStore', () => redisApprovalStore(redis, untyped({ storeTimeout: 5 })), 'storeTimeoutMs'],
  ['redisRateStore', () => redisRateStore(redis, untyped({ prefx: 'x' })), 'prefix'],
  ['redisWindowStore', () => redisWindowStore(redis, untyped({ prefx: 'x' })), 'prefix'],
  ['redisBudget', () => redisBudget(redis, untyped({ id: 'run', limit: 5, ttl: 5 })), 'ttlMs'],
  [
    'redisAutopilotStore',
    () => redisAutopilotStore(untyped({ client: redis, flushEvery: 5 })),
    'flushEveryMs',
  ],
  ['postgresReceiptStore', () => postgresReceiptStore(pool, untyped({ createTables: true })), 'createTable'],
  [
    'restateRun',
    () =>
      restateRun(untyped({}), dispatcher, 'payments.refund', {}, untyped({ name: 'refund', keyTTLMs: 5 })),
    'keyTtlMs',
  ],
  ['controlRoom', () => controlRoom(untyped({ token: 'a-console-token-0123', bassPath: '/c' })), 'basePath'],
  [
    'dbosStep',
    () => dbosStep(dispatcher, 'payments.refund', {}, untyped({ name: 'refund', maxAttempt: 2 })),
    'maxAttempts',
  ],
];

describe('a misspelt option key', () => {
  it.each(nearMisses)('%s throws a TypeError naming the nearest key', async (_factory, call, nearest) => {
    const thrown = await (async () => call())().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(thrown).toBeInstanceOf(TypeError);
    expect((thrown as TypeError).message).toMatch(/unknown (option|field|hint)/);
    expect((thrown as TypeError).message).toContain(`did you mean "${nearest}"?`);
  });

  it('lists the known keys when none is near', () => {
    expect(() => retry(untyped({ somethingElse: true }))).toThrow(
      'retry() got an unknown option "somethingElse"; it takes maxAttempts, baseDelayMs',
    );
  });

  it('reads as the issue asks for a bridge’s spelling given to a factory that does not take it', () => {
    expect(() =>
      toAiSdkTools(untyped({ registry, dispatcher, approval: approvalGate({ registry }) })),
    ).toThrow('toAiSdkTools() got an unknown option "approval"; did you mean "approvals"?');
  });
});
