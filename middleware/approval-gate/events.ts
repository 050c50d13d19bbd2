/**
 * The approval gate's events, merged into the core's `DispatchEventDetails`.
 * @module
 */

import type { ApprovalAuditRecord } from './store.js';

declare module '../../src/types.js' {
  interface DispatchEventDetails {
    /**
     * A request was decided, anywhere (any channel, any process sharing the store): approved,
     * approved with edited args, denied, or expired. Heard through `gate.subscribe`, fed by the
     * store's `subscribe` (Redis pub/sub across a fleet); its fields are the store's audit record.
     */
    'approval.decided': ApprovalAuditRecord;
    /** A call was paused for approval (once per token). */
    'approval.required': {
      /** The token a person approves or denies. */
      readonly token: string;
      /** Why approval is needed. */
      readonly reason: string;
      /** When the token expires, in milliseconds since the epoch. */
      readonly expiresAt: number;
    };
    /** The approval gate decided a call (once per gated call). */
    'approval.decision': {
      /** What the gate decided. */
      readonly action: 'allow' | 'deny' | 'require';
      /** Which rule decided: `decide`, `override`, `tool`, `annotations`, `fallback`, `token` or `host`. */
      readonly source: string;
      /** Why, when known. */
      readonly reason?: string;
      /** `false` in shadow mode, where nothing is blocked. */
      readonly enforced: boolean;
    };
  }
}
