/**
 * tool-dispatcher/durable: what the durable-engine adapters share, for any engine. `engineVerdict`
 * says which failures the engine should retry, so each failure class has one retry owner: fast
 * transient retries stay in the stack, the rest goes to the engine or is final. The engines
 * themselves have their own subpaths: `tool-dispatcher/restate`, `tool-dispatcher/dbos`.
 *
 * @example
 * import { engineVerdict } from 'tool-dispatcher/durable';
 * const verdict = engineVerdict(outcome, registry.get('payments.charge'));
 *
 * @module tool-dispatcher/durable
 */

export { engineVerdict, type EngineVerdict, type EngineVerdictTool } from './engine-verdict.js';
export { defaultKeyTtlMs, type DurableStepOptions, type JournaledOutcome, type StepTool } from './step.js';
