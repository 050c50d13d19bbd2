/**
 * The simulated tool of the autopilot bench: a handler that plays a trace's attempt plans on the
 * virtual clock (and, for the `capacity` trace, through a pool of servers with a queue), ending
 * on its signal like a real one.
 * @module
 */

import { TransientError } from '../../index.js';
import type { ToolHandler } from '../../src/types.js';
import type { Trace } from './traces.js';
import type { VirtualClock } from './virtual-clock.js';

/** The args the simulated tool takes: which call of the trace this is. */
export interface SimulatedCall {
  /** The call's index in the trace. */
  readonly call: number;
}

interface Waiting {
  readonly serviceMs: number;
  readonly start: () => void;
}

/**
 * Servers that take one request each; the rest wait in one FIFO queue, refused at once past
 * `queueLimit`. An attempt aborted while queued leaves the queue; one aborted in service ends for
 * its caller at once, but its server stays busy until the work is done (a backend does not know
 * its client gave up): hedges and timeouts cost capacity, as in production.
 */
export class ServerPool {
  readonly #clock: VirtualClock;
  readonly #servers: (atMs: number) => number;
  readonly #queueLimit: number;
  readonly #queue: Waiting[] = [];
  #busy = 0;
  /** Service milliseconds spent on attempts whose caller had gone. */
  wastedMs = 0;

  constructor(clock: VirtualClock, servers: (atMs: number) => number, queueLimit: number) {
    this.#clock = clock;
    this.#servers = servers;
    this.#queueLimit = queueLimit;
  }

  /** Servers working now. */
  get busy(): number {
    return this.#busy;
  }

  /** Requests waiting for a server now. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Serves one request of `serviceMs`; rejects when the queue is full or `signal` aborts first. */
  serve(serviceMs: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      let gone = false;
      const onAbort = () => {
        gone = true;
        const index = this.#queue.indexOf(waiting);
        if (index >= 0) this.#queue.splice(index, 1);
        reject(signal.reason);
      };
      const waiting: Waiting = {
        serviceMs,
        start: () => {
          this.#busy++;
          const startedAt = this.#clock.now();
          this.#clock.setTimeout(() => {
            this.#busy--;
            if (gone) this.wastedMs += this.#clock.now() - startedAt;
            signal.removeEventListener('abort', onAbort);
            if (!gone) resolve();
            this.#startWaiting();
          }, serviceMs);
        },
      };
      if (this.#busy < this.#servers(this.#clock.now())) waiting.start();
      else if (this.#queue.length >= this.#queueLimit) {
        reject(new TransientError('server queue full'));
        return;
      } else this.#queue.push(waiting);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  #startWaiting(): void {
    while (this.#queue.length > 0 && this.#busy < this.#servers(this.#clock.now())) {
      (this.#queue.shift() as Waiting).start();
    }
  }
}

/**
 * A handler that plays `trace`: attempt `ctx.attempt` of call `args.call` takes its plan's
 * latency of virtual time (through `pool` when given), then answers or throws a `TransientError`;
 * an abort ends it at once with the signal's reason. Counts every attempt it starts in `started`.
 *
 * @example
 * const tool = simulatedTool(trace, clock);
 * registry.register({ name: 'sim', inputSchema: z.object({ call: z.number() }), idempotent: true, handler: tool.handler });
 */
export function simulatedTool(
  trace: Trace,
  clock: VirtualClock,
  pool?: ServerPool,
): { handler: ToolHandler<SimulatedCall, string>; readonly started: () => number } {
  let started = 0;
  const handler: ToolHandler<SimulatedCall, string> = async (args, ctx) => {
    started++;
    const plan = trace.plan(args.call, ctx.attempt - 1);
    if (pool !== undefined) await pool.serve(plan.latencyMs, ctx.signal);
    else await clock.sleep(plan.latencyMs, ctx.signal);
    if (plan.fails) throw new TransientError(`call ${args.call} attempt ${ctx.attempt} failed`);
    return `call ${args.call} answered`;
  };
  return { handler, started: () => started };
}
