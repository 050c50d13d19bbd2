// The package root's run-time names, pinned: the list grows only on purpose (a new name here is a
// new contract, a name gone is a breaking change for the CHANGELOG), and the author kit stays in
// `tool-dispatcher/middleware`.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as root from '../index.js';
import * as kit from '../middleware/kit.js';
import * as internalKit from '../middleware/internal-kit.js';
import * as middleware from '../middleware/index.js';

const rootNames = [
  // The dispatcher and the registry.
  'createDispatcher',
  'ToolRegistry',
  // The envelope.
  'DispatchError',
  'isDispatchError',
  'toDispatchError',
  'OutcomeUnknownError',
  'ToolError',
  'TransientError',
  // Reading a backend's 429 (rate limits).
  'classifyRateLimit',
  'parseRetryAfter',
  // The helpers a harness loop uses.
  'createBudget',
  'createRedactor',
  'harnessStep',
  'toolAnswer',
  'toToolMessage',
  // The layers and the default stack.
  'approvalGate',
  'autopilot',
  'retryBudget',
  'memoryApprovalStore',
  'memorySpillStore',
  'outputGuard',
  'budgetGuard',
  'circuitBreaker',
  'concurrencyLimit',
  'defaultStack',
  'errorMapping',
  'idempotency',
  'isCircuitFailure',
  'isRetryable',
  'logging',
  'rateLimit',
  'retry',
  'schemaValidation',
  'timeout',
  'toolLookup',
  'windowedBudget',
];

// The author kit, pinned as the root is: what a layer of your own needs, the onion engine and the
// helpers for a host bridge of your own. A name gone is a "Removed" line in the CHANGELOG.
const kitNames = [
  // Waits and the library's envelopes.
  'sleep',
  'raceAbort',
  'onAbort',
  'maxTimerDelayMs',
  'cancelled',
  'budgetExceeded',
  // The option checks.
  'optionsObject',
  'optionKeys',
  'rejectUnknownKeys',
  'nearestName',
  'requireClock',
  'requireFunction',
  'requireInteger',
  'requireNumber',
  // Stores, tool fields, limits, fingerprints and a relaying handler's questions.
  'keepLeaseAlive',
  'storeUnavailable',
  'declareToolField',
  'untilLimitEnds',
  'declareOutcomeField',
  'withMessage',
  'fingerprint',
  'hasProgressListener',
  'signalEndsWithAttempt',
  // The onion engine and the default clock.
  'compose',
  'systemClock',
  // For a host bridge of your own.
  'toJsonSafe',
  'jsonRpcCodeFor',
  'createNameMap',
  'toObjectSchema',
  'providerCallOptions',
];

const memoryStores = [
  'memoryAutopilotStore',
  'memoryCircuitStore',
  'memoryIdempotencyStore',
  'memoryRateStore',
  'memorySlotStore',
  'memoryWindowStore',
];

describe('the package root', () => {
  it('exports exactly its pinned names', () => {
    expect(Object.keys(root).sort()).toEqual([...rootNames].sort());
  });

  it('exports no name of the author kit and no memory store', () => {
    const kitNames = [...Object.keys(kit), ...memoryStores];
    expect(kitNames).toContain('sleep');
    expect(kitNames.filter((name) => name in root)).toEqual([]);
  });

  it('leaves the engine and the host-bridge helpers to the kit', () => {
    const moved = [
      'compose',
      'createNameMap',
      'jsonRpcCodeFor',
      'providerCallOptions',
      'systemClock',
      'toJsonSafe',
      'toObjectSchema',
    ];
    for (const name of moved) expect(kit, name).toHaveProperty(name);
    expect(Object.keys(root)).not.toContain('defaultToolTimeoutMs');
  });

  it('keeps the kit to its pinned names', () => {
    expect(Object.keys(kit).sort()).toEqual([...kitNames].sort());
  });

  it('lists the kit in docs/writing-middleware.md as the code has it', () => {
    const guide = readFileSync(join(import.meta.dirname, '../docs/writing-middleware.md'), 'utf8');
    const section = guide.slice(
      guide.indexOf('## The author kit'),
      guide.indexOf('\n## ', guide.indexOf('## The author kit') + 1),
    );
    const documented = new Set<string>();
    for (const [, cell] of section.matchAll(/^\| (.+?) \|/gm)) {
      for (const [, name] of (cell as string).matchAll(/`([A-Za-z_$][\w$]*)/g))
        documented.add(name as string);
    }
    expect(documented).toContain('sleep');
    expect([...documented].filter((name) => !(name in middleware))).toEqual([]);
    expect(kitNames.filter((name) => !documented.has(name))).toEqual([]);
  });

  it('publishes no name of the internal kit from any face', () => {
    const internal = Object.keys(internalKit);
    expect(internal).toContain('noop');
    expect(internal.filter((name) => name in middleware || name in root)).toEqual([]);
  });

  it('leaves every kit name and memory store to tool-dispatcher/middleware', () => {
    for (const name of [...Object.keys(kit), ...memoryStores]) expect(middleware).toHaveProperty(name);
  });

  it('exports each layer as the same function from both faces', () => {
    const fromMiddleware = new Map(Object.entries(middleware));
    const layers = Object.entries(root).filter(([name]) => fromMiddleware.has(name));
    expect(layers.map(([name]) => name)).toContain('defaultStack');
    for (const [name, value] of layers) expect(value, name).toBe(fromMiddleware.get(name));
  });
});
