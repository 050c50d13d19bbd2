/**
 * tool-dispatcher/dbos: run a tool call as a DBOS step, with the workflow and step ids as its
 * idempotency key and each failure class retried by one owner. Needs the optional peer
 * `@dbos-inc/dbos-sdk` ^5.3.
 *
 * @example
 * import { DBOS } from '@dbos-inc/dbos-sdk';
 * import { dbosStep } from 'tool-dispatcher/dbos';
 * const charge = await dbosStep(dispatcher, 'payments.charge', order, { name: 'charge' });
 *
 * @module tool-dispatcher/dbos
 */

export { dbosStep, type DbosStepOptions } from './dbos-step.js';
export type { JournaledOutcome, StepTool } from '../durable/step.js';
