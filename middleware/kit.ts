/**
 * The author kit: the helpers the built-in layers are made with, published so that a layer of
 * your own waits, cancels and checks its options the same way (docs/writing-middleware.md).
 * @module
 */

export { maxTimerDelayMs, neverAborted, onAbort, raceAbort, sleep } from '../src/internal/abort.js';
export { budgetExceeded, cancelled } from '../src/internal/failures.js';
export {
  optionsObject,
  requireClock,
  requireFunction,
  requireInteger,
  requireNumber,
} from '../src/internal/options.js';
export { isThenable } from '../src/internal/thenable.js';
export { parseJsonArgs } from '../src/internal/raw-json-args.js';
