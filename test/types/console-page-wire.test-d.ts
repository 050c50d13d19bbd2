// The console page reads the server's JSON through its own copy of the shapes
// (integrations/console/page/wire.ts, compiled for the browser alone); the server's types must
// still fit that copy, or the page reads fields that are no longer sent.
import { describe, expectTypeOf, it } from 'vitest';
import type { ApprovalAuditRecord } from '../../index.js';
import type { ApprovalItem as ServerApprovalItem } from '../../integrations/console/index.js';
import type { HealthReport, InDoubtItem, InDoubtResolution } from '../../integrations/console/panes.js';
import type {
  ApprovalDecided,
  ApprovalItem,
  HealthAnswer,
  InDoubtOutcome,
  InDoubtRow,
} from '../../integrations/console/page/wire.js';

describe("the console page's wire types", () => {
  it('accept what the panes answer', () => {
    expectTypeOf<HealthReport>().toExtend<HealthAnswer>();
    expectTypeOf<InDoubtItem>().toExtend<InDoubtRow>();
    expectTypeOf<InDoubtResolution>().toExtend<InDoubtOutcome>();
  });

  it('accept a pending request as the approvals pane lists it', () => {
    expectTypeOf<ServerApprovalItem>().toExtend<ApprovalItem>();
  });

  it('accept an audit record as the approval.decided event', () => {
    expectTypeOf<ApprovalAuditRecord>().toExtend<ApprovalDecided>();
  });
});
