// The autopilot tests' fixture: one tool whose attempts play a script (each takes its time on the
// fake timers and ends as told, or on its signal), behind the default stack with an autopilot.

import { z } from 'zod';
import {
  type AutopilotOptions,
  autopilot,
  createDispatcher,
  type DispatchEvent,
  defaultStack,
  type RetryOptions,
  ToolRegistry,
  TransientError,
} from '../../index.js';

/**
 * One attempt of the scripted tool: how long it takes, and how it ends (`ok` unless told;
 * `thrown at once`: the handler throws a `TransientError` before it has a promise to return).
 */
export interface ScriptedAttempt {
  readonly ms: number;
  readonly ends?: 'ok' | 'transient' | 'error' | 'thrown at once';
  /** The attempt plays its whole time even once its signal aborts, then ends as told. */
  readonly ignoresAbort?: boolean;
}

/** The scripted tool and the stack it runs behind. */
export interface ScriptedToolOptions {
  readonly name: string;
  readonly timeoutMs: number;
  readonly idempotent: boolean;
  /** `annotations.readOnlyHint`; no annotations when `undefined`. */
  readonly readOnly?: boolean | undefined;
  readonly pilot: AutopilotOptions;
  readonly retry: RetryOptions;
  /** The attempt played once the script has run out. */
  readonly fallback: () => ScriptedAttempt;
  /** What a successful attempt returns (`served`: successes so far, this one included). */
  readonly answer: (attempt: ScriptedAttempt, served: number) => unknown;
}

/**
 * A registry of the scripted tool and a dispatcher of the default stack around `autopilot(pilot)`:
 * push attempts onto `script`; `runs` counts attempts started, aborted through their signal and
 * finished; `keys` holds each attempt's idempotency key (`''` for none); `events` every event.
 */
export function scriptedTool(options: ScriptedToolOptions) {
  const events: DispatchEvent[] = [];
  const script: ScriptedAttempt[] = [];
  const keys: string[] = [];
  const runs = { started: 0, aborted: 0, finished: 0 };
  let served = 0;
  const play = async (attempt: ScriptedAttempt, signal: AbortSignal): Promise<unknown> => {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, attempt.ms);
      signal.addEventListener(
        'abort',
        () => {
          runs.aborted++;
          if (attempt.ignoresAbort === true) return;
          clearTimeout(timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
    runs.finished++;
    if (attempt.ends === 'transient') throw new TransientError('backend busy');
    if (attempt.ends === 'error') throw new Error('broken');
    served++;
    return options.answer(attempt, served);
  };
  const registry = new ToolRegistry().register({
    name: options.name,
    inputSchema: z.object({}),
    timeoutMs: options.timeoutMs,
    idempotent: options.idempotent,
    ...(options.readOnly === undefined ? {} : { annotations: { readOnlyHint: options.readOnly } }),
    handler: (_args, { signal, idempotencyKey }) => {
      runs.started++;
      keys.push(idempotencyKey ?? '');
      const attempt = script.shift() ?? options.fallback();
      if (attempt.ends === 'thrown at once') throw new TransientError('backend refused at once');
      return play(attempt, signal);
    },
  });
  const pilot = autopilot(options.pilot);
  const dispatcher = createDispatcher(defaultStack({ registry, autopilot: pilot, retry: options.retry }), {
    onEvent: (event) => events.push(event),
  });
  return { pilot, dispatcher, events, script, runs, keys };
}
