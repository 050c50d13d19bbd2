/**
 * The calls a person rejected one by one, remembered per run context: the Agents SDK before
 * 0.23.1 drops a call's exact rejection when the tool's approval default changes afterwards
 * (`approve(item, { alwaysApprove: true })` on another call of the same tool), and the Runner
 * then runs the rejected call.
 * @module
 */

import type { RunContext } from '@openai/agents';

type Decide = RunContext<unknown>['rejectTool'];
type ApprovalItem = Parameters<Decide>[0];

// Per run context: `${wire name}\0${call id}` → the reviewer's message (or undefined).
const rejectedByContext = new WeakMap<object, Map<string, string | undefined>>();

function callKeyOf(item: ApprovalItem): string | undefined {
  const raw = (item as { rawItem?: { name?: unknown; callId?: unknown } } | undefined)?.rawItem;
  return typeof raw?.name === 'string' && typeof raw.callId === 'string'
    ? `${raw.name}\0${raw.callId}`
    : undefined;
}

/**
 * Watches the decisions taken on `runContext` (once per context): an exact rejection is
 * remembered until the same call is approved, whatever the tool's default becomes. Decisions
 * taken on a run state restored with `RunState.fromString` before any of its calls asked for
 * approval are not seen (the SDK's own record then decides).
 */
export function watchRejections(runContext: RunContext<unknown> | undefined): void {
  if (runContext === undefined || rejectedByContext.has(runContext)) return;
  if (typeof runContext.rejectTool !== 'function' || typeof runContext.approveTool !== 'function') return;
  const rejected = new Map<string, string | undefined>();
  rejectedByContext.set(runContext, rejected);
  const reject = runContext.rejectTool.bind(runContext);
  const approve = runContext.approveTool.bind(runContext);
  runContext.rejectTool = (item, options) => {
    reject(item, options);
    const key = callKeyOf(item);
    if (key !== undefined && options?.alwaysReject !== true) rejected.set(key, options?.message);
  };
  runContext.approveTool = (item, options) => {
    approve(item, options);
    const key = callKeyOf(item);
    // The person's last word on this very call wins; a default set through another call does not.
    if (key !== undefined) rejected.delete(key);
  };
}

/** The reason a person gave for rejecting the call `callId` of `wireName`, if they rejected it exactly. */
export function exactRejectionOf(
  runContext: RunContext<unknown> | undefined,
  wireName: string,
  callId: string,
): { reason: string } | undefined {
  const rejected = runContext === undefined ? undefined : rejectedByContext.get(runContext);
  const key = `${wireName}\0${callId}`;
  if (rejected === undefined || !rejected.has(key)) return undefined;
  return { reason: rejected.get(key) ?? 'the reviewer rejected it' };
}
