/**
 * tool-dispatcher/restate: run a tool call as a Restate `ctx.run` step, with the engine's
 * invocation id as its idempotency key and each failure class retried by one owner. Needs the
 * optional peer `@restatedev/restate-sdk` (1.15 or later); on Node 20 it installs the
 * `Promise.withResolvers` the SDK calls.
 *
 * @example
 * import * as restate from '@restatedev/restate-sdk';
 * import { restateRun } from 'tool-dispatcher/restate';
 * const charge = await restateRun(ctx, dispatcher, 'payments.charge', order, { name: 'charge' });
 *
 * @module tool-dispatcher/restate
 */

import './promise-with-resolvers.js';

export { restateRun, type RestateRunOptions } from './restate-run.js';
export type { JournaledOutcome, StepTool } from '../durable/step.js';
