/**
 * The approval gate's tool field, `requiresApproval`, and the call its rules judge: merged into the
 * core's `ToolDefinition` and `Tool`, and declared to the registry, which checks it.
 * @module
 */

import type { StandardSchemaV1 } from '../../src/standard-schema.js';
import type { Tool } from '../../src/types.js';
import { declareToolField, type ToolField } from '../kit.js';

declare module '../../src/types.js' {
  interface ToolDefinition<Schema extends StandardSchemaV1 = StandardSchemaV1, Result = unknown> {
    /** Whether a call must be approved first (read by `approvalGate`). @default the gate's fallback */
    requiresApproval?: ApprovalRequirement<StandardSchemaV1.InferOutput<Schema>>;
  }
  interface Tool {
    /** Its own approval rule, if any. */
    readonly requiresApproval?: ApprovalRequirement | undefined;
  }
}

/** A tool's own approval rule: a boolean, or a function of its validated args. */
export type ApprovalRequirement<Args = never> =
  | boolean
  | ((args: Args, call: ApprovalCall) => boolean | Promise<boolean>);

/**
 * The call an approval rule (a tool's `requiresApproval`, the gate's `decide`) judges.
 *
 * @example
 * // A per-tenant policy: trial workspaces may not refund at all.
 * decide: (call, byDefault) =>
 *   call.toolName === 'payments.refund' && call.tenant?.startsWith('trial:')
 *     ? { action: 'deny', reason: 'trial workspaces cannot refund' }
 *     : byDefault,
 */
export interface ApprovalCall {
  /** The tool. */
  readonly tool: Tool;
  /** The tool's registered name (`tool.name`). */
  readonly toolName: string;
  /** The validated args. */
  readonly args: unknown;
  /** The call's id. */
  readonly callId: string;
  /** The call's idempotency key, if any. */
  readonly idempotencyKey: string | undefined;
  /** Who the call is for: the dispatch's `tenant` option, if any. */
  readonly tenant: string | undefined;
}

/** `requiresApproval` as the gate declares it to the registry. */
export const requiresApprovalField: ToolField = {
  name: 'requiresApproval',
  check(value, tool) {
    if (typeof value !== 'boolean' && typeof value !== 'function') {
      throw new TypeError(`requiresApproval of "${tool}" must be a boolean or a function of the args`);
    }
  },
};

// Tools may carry their own approval rule (`requiresApproval`) once this module is loaded:
// tool-dispatcher/middleware imports it for this effect, and package.json lists it in sideEffects
// so that no bundler drops it.
declareToolField(requiresApprovalField);
