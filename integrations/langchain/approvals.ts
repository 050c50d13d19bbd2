/**
 * The approval gate's calls as LangChain's human-in-the-loop interrupt: the reviewer's decisions,
 * kept in the agent's state until the tool node answers each call.
 * @module
 */

import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { ActionRequest, Decision, HITLRequest, ReviewConfig } from 'langchain';
import { z } from 'zod';
import type { ApprovalGate } from '../../index.js';
import type { EvaluateOptions } from '../../middleware/index.js';
import { rawArgumentsOf } from './invalid-calls.js';

/** The state key under which the decisions of the last model turn wait for the tool node. */
export const reviewKey = 'toolDispatcherReview';

/**
 * A reviewer's answer for one call: run it (as approved, maybe with edited args), refuse it, or
 * answer the model in the tool's place (`respond`: the tool never runs, and nothing is recorded
 * as an approval or a denial).
 */
export type Review =
  | { readonly approvedBy: string }
  | { readonly rejected: string }
  | { readonly badEdit: string }
  | { readonly responded: string };

/** The reviews of one model turn, by tool call id. */
export type Reviews = Readonly<Record<string, Review>>;

/** The middleware's state: checkpointed with the thread, so a resumed run finds the decisions. */
export const reviewState = z.object({
  /** The last model turn's decisions by tool call id, waiting for the tool node. */
  [reviewKey]: z.record(z.string(), z.record(z.string(), z.string())).optional(),
});

/** The state update of an afterModel hook: the last AI message rewritten, the turn's reviews. */
export interface ReviewUpdate {
  readonly message: AIMessage | undefined;
  readonly reviews: Reviews;
}

interface Gated {
  readonly id: string;
  readonly wire: string;
  readonly args: unknown;
  readonly reason: string | undefined;
}

type ToolCalls = NonNullable<AIMessage['tool_calls']>;
type Interrupt = (value: HITLRequest) => unknown;

const allowedDecisions: ReviewConfig['allowedDecisions'] = ['approve', 'edit', 'reject'];

/**
 * Asks `approvals` about each call of `message` to one of the offered tools, with the options
 * `optionsOf` gives its id (the call id, key and tenant its dispatch will carry); when any needs a
 * person, raises one interrupt shaped as `humanInTheLoopMiddleware`'s (`actionRequests`,
 * `reviewConfigs`) and reads the `decisions` it is resumed with, in call order.
 */
export async function reviewCalls(
  approvals: Pick<ApprovalGate, 'evaluate'>,
  offered: ReadonlyMap<string, string>,
  message: BaseMessage | undefined,
  interrupt: Interrupt | undefined,
  optionsOf: (id: string) => EvaluateOptions,
): Promise<ReviewUpdate> {
  if (message === undefined || !AIMessage.isInstance(message)) return { message: undefined, reviews: {} };
  const calls = message.tool_calls ?? [];
  const gated: Gated[] = [];
  for (const call of calls) {
    const toolName = offered.get(call.name);
    // A call with no id cannot be matched to its decision; the gate answers it itself.
    if (toolName === undefined || typeof call.id !== 'string' || call.id.length === 0) continue;
    if (rawArgumentsOf(call.args) !== undefined) continue;
    const decision = await approvals.evaluate(toolName, call.args, optionsOf(call.id));
    if (decision.enforced && decision.action === 'require')
      gated.push({ id: call.id, wire: call.name, args: call.args, reason: decision.reason });
  }
  if (gated.length === 0) return { message: undefined, reviews: {} };
  if (typeof interrupt !== 'function') {
    throw new Error(
      'dispatcherMiddleware({ approvals }) needs a LangGraph runtime that can interrupt: give createAgent a checkpointer',
    );
  }
  const answer = interrupt({
    actionRequests: gated.map(actionRequest),
    reviewConfigs: gated.map((call) => ({ actionName: call.wire, allowedDecisions })),
  });
  const decisions = (answer as { decisions?: unknown } | null | undefined)?.decisions;
  if (!Array.isArray(decisions) || decisions.length !== gated.length) {
    throw new Error(
      `Resume the approval with { decisions } holding one decision per action request (${gated.length})`,
    );
  }
  const reviews: Record<string, Review> = {};
  const edits = new Map<string, unknown>();
  gated.forEach((call, index) => {
    const { review, args } = read(decisions[index], call);
    reviews[call.id] = review;
    if (args !== undefined) edits.set(call.id, args);
  });
  return { message: edits.size === 0 ? undefined : withArgs(message, edits), reviews };
}

/** The review of the call `id` in `state`, if the last model turn had one. */
export function reviewOf(state: unknown, id: unknown): Review | undefined {
  const reviews = (state as Record<string, unknown> | undefined)?.[reviewKey];
  if (typeof reviews !== 'object' || reviews === null || typeof id !== 'string') return undefined;
  return Object.hasOwn(reviews, id) ? (reviews as Reviews)[id] : undefined;
}

function actionRequest(call: Gated): ActionRequest {
  const why = call.reason === undefined ? '' : ` (${call.reason})`;
  return {
    name: call.wire,
    args: call.args as ActionRequest['args'],
    description: `Tool execution requires approval${why}\n\nTool: ${call.wire}\nArgs: ${JSON.stringify(call.args, null, 2)}`,
  };
}

// One decision: approve, edit (same tool, new args, approved as edited), reject (with the
// reviewer's message as the reason) or respond (LangChain 1.5.18's per-call decision, which the
// served 1.5.14 does not offer yet: the reviewer's answer stands in for the tool's). Anything
// else is the resumer's mistake, thrown as humanInTheLoopMiddleware throws it.
function read(given: unknown, call: Gated): { review: Review; args?: unknown } {
  if ((given as { type?: unknown } | null | undefined)?.type === 'respond') return responded(given, call);
  const decision = given as (Decision & { approvedBy?: unknown }) | null | undefined;
  const approvedBy = typeof decision?.approvedBy === 'string' ? decision.approvedBy : 'langchain';
  switch (decision?.type) {
    case 'approve':
      return { review: { approvedBy } };
    case 'edit': {
      const edited = decision.editedAction as { name?: unknown; args?: unknown } | undefined;
      if (typeof edited !== 'object' || edited === null || !('args' in edited)) {
        return { review: { badEdit: `The reviewer's edit of "${call.wire}" has no args` } };
      }
      if (edited.name !== undefined && edited.name !== call.wire) {
        return {
          review: {
            badEdit: `The reviewer's edit of "${call.wire}" names another tool; an edit may change the args only`,
          },
        };
      }
      // The edited args are approved as they are; the dispatch validates them again, so a bad
      // edit is a `schema` outcome, never a run.
      return { review: { approvedBy }, args: edited.args };
    }
    case 'reject':
      return {
        review: {
          rejected:
            typeof decision.message === 'string' && decision.message.length > 0
              ? decision.message
              : 'the reviewer rejected it',
        },
      };
    default:
      throw new Error(
        `Unexpected decision for "${call.wire}": ${JSON.stringify(given)}; expected approve, edit, reject or respond`,
      );
  }
}

// A `respond` decision's answer: its `message` text, or its `response` (text, or JSON as text).
function responded(given: unknown, call: Gated): { review: Review } {
  const { message, response } = given as { message?: unknown; response?: unknown };
  const answer =
    typeof message === 'string'
      ? message
      : typeof response === 'string'
        ? response
        : response === undefined
          ? undefined
          : JSON.stringify(response);
  if (answer === undefined) {
    throw new Error(`The respond decision for "${call.wire}" has no message (or response) to answer with`);
  }
  return { review: { responded: answer } };
}

// The message with the edited calls' args replaced (same id, so the agent's reducer replaces it).
function withArgs(message: AIMessage, edits: ReadonlyMap<string, unknown>): AIMessage {
  const toolCalls: ToolCalls = (message.tool_calls ?? []).map((call) =>
    call.id !== undefined && edits.has(call.id)
      ? { ...call, args: edits.get(call.id) as ToolCalls[number]['args'] }
      : call,
  );
  return new AIMessage({
    id: message.id as string,
    content: message.content,
    ...(message.name === undefined ? {} : { name: message.name }),
    additional_kwargs: message.additional_kwargs,
    response_metadata: message.response_metadata,
    ...(message.usage_metadata === undefined ? {} : { usage_metadata: message.usage_metadata }),
    tool_calls: toolCalls,
    invalid_tool_calls: message.invalid_tool_calls ?? [],
  });
}
