/**
 * A paused call put to the user on 2026-07-28, where a server cannot send a request of its own:
 * the approval is asked as an `input_required` round (MRTR), and the retry that answers it is
 * read back. Our answer key and state travel beside an upstream's own, which pass on untouched.
 * @module
 */

import { inputRequired, type CallToolResult } from '@modelcontextprotocol/server';
import type { InputRound } from './input-required.js';

/** The `inputRequests` key of the approval question. */
export const approvalInputKey = 'tool-dispatcher/approve';

// Our `requestState`: this prefix, the token, then (after a newline) an upstream's own state
// that a round after the approval carries. Tokens are base64url, so they hold no newline.
const statePrefix = 'tool-dispatcher/approval:';

/** What the user answered the approval question: yes, no, or dismissed it without a choice. */
export type ApprovalAnswer = 'approve' | 'deny' | 'dismissed';

/** A retry that carries our approval state. */
export interface ApprovalRetry {
  /** The token the question was about (checked against the call before it counts). */
  readonly token: string;
  /** The user's answer, when this retry answers the question (not an upstream's round). */
  readonly answer: ApprovalAnswer | undefined;
  /** The round as the tools see it: our answer and our state taken out. */
  readonly round: InputRound;
}

/**
 * The approval state a retry carries, if it carries ours.
 *
 * @example
 * const ours = approvalRetryOf(round); // { token, answer: 'approve', round: { … } }
 */
export function approvalRetryOf(round: InputRound | undefined): ApprovalRetry | undefined {
  const state = round?.requestState;
  if (round === undefined || state === undefined || !state.startsWith(statePrefix)) return undefined;
  const newline = state.indexOf('\n', statePrefix.length);
  const token = state.slice(statePrefix.length, newline === -1 ? undefined : newline);
  if (token === '') return undefined;
  const { [approvalInputKey]: response, ...rest } = round.inputResponses ?? {};
  return {
    token,
    answer: answerOf(response),
    round: {
      inputResponses: Object.keys(rest).length === 0 ? undefined : rest,
      requestState: newline === -1 ? undefined : state.slice(newline + 1),
      capabilities: round.capabilities,
    },
  };
}

/**
 * Whether a 2026-07-28 caller's declared capabilities let us ask it a form question (a bare
 * `elicitation: {}` means form, as the SDK reads it).
 *
 * @example
 * canBeAsked({ elicitation: {} }); // true
 */
export function canBeAsked(capabilities: unknown): boolean {
  const elicitation = (capabilities as { elicitation?: unknown } | undefined)?.elicitation;
  if (typeof elicitation !== 'object' || elicitation === null) return false;
  const { form, url } = elicitation as Record<string, unknown>;
  return form !== undefined || url === undefined;
}

/**
 * The `input_required` answer that asks the user to approve a paused call.
 *
 * @example
 * return approvalQuestion(approvalElicitation('payments.refund', ticket), ticket.token);
 */
export function approvalQuestion(
  question: { message: string; requestedSchema: Record<string, unknown> },
  token: string,
): CallToolResult {
  const asked = inputRequired({
    inputRequests: {
      [approvalInputKey]: inputRequired.elicit(question as Parameters<typeof inputRequired.elicit>[0]),
    },
    requestState: stateOf(token, undefined),
  });
  // A tools/call handler may answer `input_required` on 2026-07-28; the result type leaves it out.
  return asked as unknown as CallToolResult;
}

/**
 * An upstream's `input_required` answer with our token riding in its state, so the caller's
 * retry still runs under the approval it was given.
 *
 * @example
 * return withApprovalState(asked, token);
 */
export function withApprovalState(answer: object, token: string): object {
  const { requestState } = answer as { requestState?: unknown };
  return {
    ...answer,
    requestState: stateOf(token, typeof requestState === 'string' ? requestState : undefined),
  };
}

function stateOf(token: string, carried: string | undefined): string {
  return carried === undefined ? `${statePrefix}${token}` : `${statePrefix}${token}\n${carried}`;
}

// The bare elicitation result the retry carries under our key.
function answerOf(response: unknown): ApprovalAnswer | undefined {
  if (typeof response !== 'object' || response === null) return undefined;
  const { action, content } = response as { action?: unknown; content?: unknown };
  if (action === 'accept') {
    return (content as { approve?: unknown } | undefined)?.approve === true ? 'approve' : 'deny';
  }
  if (action === 'decline') return 'deny';
  return action === 'cancel' ? 'dismissed' : undefined;
}
