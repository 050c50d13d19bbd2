/**
 * gatherBounded: a batch of calls, at most `concurrency` at a time, with no promise per call.
 * @module
 */

import { DispatchError, describeThrown } from './errors.js';
import { optionKeys, optionsObject, requireInteger } from './internal/options.js';
import type { DispatchOptions, Outcome } from './types.js';

/** One call of a `gatherBounded` batch. */
export interface DispatchCall {
  /** The tool name. */
  name: string;
  /** The raw args. */
  args: unknown;
  /** Per-call options. */
  options?: DispatchOptions;
}

/** Options for `gatherBounded`. */
export interface GatherOptions {
  /** The most dispatches of the batch running at once. @default 8 */
  concurrency?: number;
}

const gatherOptionKeys = optionKeys<GatherOptions>({ concurrency: true });

/** Receives a call's outcome, exactly once. */
export type Report = (outcome: Outcome) => void;

/** Starts one call and reports its outcome exactly once, possibly before returning. */
export type StartCall = (
  name: string,
  args: unknown,
  options: DispatchOptions | undefined,
  report: Report,
) => void;

/**
 * Runs `batch` through `startCall`, at most `concurrency` at a time, resolving to the outcomes in
 * input order; rejects only for a bad batch or bad options.
 */
export function gather(
  batch: readonly DispatchCall[],
  options: GatherOptions | undefined,
  startCall: StartCall,
): Promise<Outcome[]> {
  let concurrency: number;
  try {
    if (!Array.isArray(batch)) throw new TypeError('gatherBounded() needs an array of calls');
    ({ concurrency = 8 } = optionsObject('gatherBounded', options ?? undefined, gatherOptionKeys));
    requireInteger('concurrency', concurrency, 1);
  } catch (error) {
    return Promise.reject(error);
  }
  return new Promise((resolve) => {
    const outcomes = new Array<Outcome>(batch.length);
    let nextIndex = 0;
    let working = Math.min(concurrency, batch.length);
    if (working === 0) return resolve(outcomes);
    const startEntry = (index: number, report: Report): void => {
      let name: string;
      let args: unknown;
      let callOptions: DispatchOptions | undefined;
      try {
        const call: unknown = batch[index];
        if (typeof call !== 'object' || call === null) {
          return report(
            new DispatchError('schema', `Call ${index} must be an object { name, args, options? }`),
          );
        }
        ({ name, args, options: callOptions } = call as DispatchCall);
      } catch (error) {
        return report(
          new DispatchError('schema', `Call ${index} could not be read: ${describeThrown(error)}`),
        );
      }
      startCall(name, args, callOptions, report);
    };
    // One worker starts calls one after another. A call that ends while it is being started
    // (a sync handler, a failed lookup) lets the loop go on instead of recursing; one that ends
    // later carries the worker on from its report, with no promise in between. A worker has one
    // call at a time, so one report function and its state serve all of its calls.
    const worker = () => {
      let index = 0;
      let starting = false;
      let endedWhileStarting = false;
      const report = (outcome: Outcome): void => {
        outcomes[index] = outcome;
        if (starting) endedWhileStarting = true;
        else work();
      };
      const work = (): void => {
        while (nextIndex < batch.length) {
          index = nextIndex++;
          starting = true;
          endedWhileStarting = false;
          startEntry(index, report);
          starting = false;
          if (!endedWhileStarting) return;
        }
        working -= 1;
        if (working === 0) resolve(outcomes);
      };
      work();
    };
    for (let i = working; i > 0; i--) worker();
  });
}
