/**
 * The approvals pane's API over an `ApprovalGate`: pending requests listed and filtered, approve
 * (as asked or with edited args), deny with a reason, and the audit log; every outcome of the
 * gate mapped to a status a person and a script can act on.
 * @module
 */

import { isDispatchError, type ApprovalGate, type ApprovalRecord } from '../../index.js';
import type { ApprovalAuditPage, ApprovalStore } from '../../middleware/index.js';
import { HttpProblem } from './http.js';

/** One pending request as the approvals pane and `GET /api/approvals` show it. */
export interface ApprovalItem {
  /** The request's token (its identity in the API). */
  readonly token: string;
  /** The tool waiting. */
  readonly tool: string;
  /** The validated args as redacted, capped JSON text, when the gate kept a preview. */
  readonly preview?: string;
  /** Why approval is needed. */
  readonly reason: string;
  /** The call that asked. */
  readonly callId: string;
  /** Who the call is for, if it said. */
  readonly tenant?: string;
  /** When it was opened, ms since the epoch (absent in records stored before it was kept). */
  readonly createdAt?: number;
  /** When the token expires, ms since the epoch. */
  readonly expiresAt: number;
  /** How long it has waited, in ms, by the console's clock. */
  readonly ageMs?: number;
}

/** The query of `GET /api/approvals`. */
export interface ApprovalQuery {
  readonly tool?: string | undefined;
  readonly tenant?: string | undefined;
  readonly limit: number;
  readonly cursor?: string | undefined;
}

/** What the console's own cursor holds: where to resume in the store, and after which request. */
interface ListCursor {
  /** The store's cursor of the page to read again (absent: the first page). */
  readonly page?: string;
  /** The token of the last request answered: the page is read from after it. */
  readonly after: string;
  /** Its `createdAt`: when it has left the page meanwhile, older requests are skipped by it. */
  readonly at: number;
}

// The page size read from a store that does not filter: its largest, so 10 000 pending take 20 reads.
const storePage = 500;

/** A pending record as an `ApprovalItem`. */
export function approvalItemOf(record: ApprovalRecord, now: number): ApprovalItem {
  return {
    token: record.token,
    tool: record.tool,
    ...(record.preview === undefined ? {} : { preview: record.preview }),
    reason: record.reason,
    callId: record.callId,
    ...(record.tenant === undefined ? {} : { tenant: record.tenant }),
    ...(record.createdAt === undefined
      ? {}
      : { createdAt: record.createdAt, ageMs: Math.max(0, now - record.createdAt) }),
    expiresAt: record.expiresAt,
  };
}

/** The approvals pane's actions over one gate. */
export class ApprovalDesk {
  constructor(
    private readonly gate: ApprovalGate,
    private readonly now: () => number,
  ) {}

  /** Whether the gate's store can list pending requests (else the pane says it cannot). */
  get canList(): boolean {
    return typeof this.gate.store.list === 'function';
  }

  /**
   * A page of pending requests matching `tool` and `tenant`, oldest first. The store is asked for
   * the page, filters included (the built-in stores apply them where they read, so one read
   * answers); what it sends is filtered here again, and a store seen to ignore the filters is read
   * on in its largest pages, each request looked at once.
   */
  async list(query: ApprovalQuery): Promise<{ items: ApprovalItem[]; cursor?: string }> {
    const list = this.gate.store.list?.bind(this.gate.store);
    if (list === undefined) throw cannotList();
    const resume = query.cursor === undefined ? undefined : parseCursor(query.cursor);
    const filters = {
      ...(query.tool === undefined ? {} : { tool: query.tool }),
      ...(query.tenant === undefined ? {} : { tenant: query.tenant }),
    };
    const items: ApprovalItem[] = [];
    const now = this.now();
    let page = resume?.page;
    let skipping = resume;
    let size = query.limit;
    for (;;) {
      const read = await list({ limit: size, ...filters, ...(page === undefined ? {} : { cursor: page }) });
      let from = 0;
      if (skipping !== undefined) {
        from = resumeIndex(read.items, skipping);
        skipping = undefined;
      }
      for (let i = from; i < read.items.length; i++) {
        const record = read.items[i] as ApprovalRecord;
        if (!matches(record, query)) {
          size = storePage;
          continue;
        }
        items.push(approvalItemOf(record, now));
        if (items.length === query.limit) {
          const more = i < read.items.length - 1 || read.cursor !== undefined;
          if (!more) return { items };
          const resumeAt = await this.#pageAfter(page, i, read, record.token, filters);
          const next: ListCursor = {
            ...(resumeAt === undefined ? {} : { page: resumeAt }),
            after: record.token,
            at: record.createdAt ?? 0,
          };
          return { items, cursor: Buffer.from(JSON.stringify(next)).toString('base64url') };
        }
      }
      if (read.cursor === undefined) return { items };
      page = read.cursor;
    }
  }

  // The store's own cursor just after item `index` of the page read at `page`: exact, so a request
  // decided before the next page is read shifts nothing. Mid-page it takes one more read, of the
  // page up to that item, kept only when it still ends there (else the page is read again and
  // walked from the token on).
  async #pageAfter(
    page: string | undefined,
    index: number,
    read: { readonly items: readonly ApprovalRecord[]; readonly cursor?: string },
    token: string,
    filters: { readonly tool?: string; readonly tenant?: string },
  ): Promise<string | undefined> {
    if (index === read.items.length - 1) return read.cursor;
    const list = this.gate.store.list?.bind(this.gate.store) as NonNullable<ApprovalStore['list']>;
    const upTo = await list({
      limit: index + 1,
      ...filters,
      ...(page === undefined ? {} : { cursor: page }),
    });
    return upTo.items.at(-1)?.token === token && upTo.cursor !== undefined ? upTo.cursor : page;
  }

  /** Every pending request (all pages), for the stream's diff. */
  async pendingTokens(): Promise<Map<string, ApprovalRecord>> {
    const list = this.gate.store.list?.bind(this.gate.store);
    const found = new Map<string, ApprovalRecord>();
    if (list === undefined) return found;
    let cursor: string | undefined;
    do {
      const read = await list({ limit: storePage, ...(cursor === undefined ? {} : { cursor }) });
      for (const record of read.items) found.set(record.token, record);
      cursor = read.cursor;
    } while (cursor !== undefined);
    return found;
  }

  /**
   * Approves `token` as asked, or with `args` edited then approved. Sent again the same way it
   * answers the same (the store's answer is idempotent and the run is claimed once).
   *
   * @throws HttpProblem 404 unknown or expired, 409 answered otherwise, 422 args failing the schema.
   */
  async approve(
    token: string,
    by: string,
    args: { readonly given: boolean; readonly value?: unknown },
  ): Promise<{ ok: true; token: string; decision: 'approved' | 'edited' }> {
    await this.#known(token);
    let approved: boolean;
    try {
      approved = await this.gate.approve(token, {
        by,
        channel: 'console',
        ...(args.given ? { args: args.value } : {}),
      });
    } catch (error) {
      throw approveRefusal(error);
    }
    const record = await this.gate.store.get(token);
    if (approved && record?.status === 'approved') {
      return { ok: true, token, decision: record.editedFrom === undefined ? 'approved' : 'edited' };
    }
    throw answeredOtherwise(record, 'approve');
  }

  /**
   * Denies `token` with `reason`. Sent again, the same answer.
   * @throws HttpProblem 404 unknown or expired, 409 already approved.
   */
  async deny(
    token: string,
    by: string,
    reason: string,
  ): Promise<{ ok: true; token: string; decision: 'denied' }> {
    await this.#known(token);
    const denied = await this.gate.deny(token, reason, { by, channel: 'console' });
    if (denied) return { ok: true, token, decision: 'denied' };
    throw answeredOtherwise(await this.gate.store.get(token), 'deny');
  }

  /** A page of the audit log (one request's with `token`). */
  async audit(query: { token?: string; limit: number; cursor?: string }): Promise<ApprovalAuditPage> {
    const audit = this.gate.store.audit?.bind(this.gate.store);
    if (audit === undefined) {
      throw new HttpProblem(501, 'not_supported', 'this approval store keeps no audit log');
    }
    try {
      return await audit(query);
    } catch (error) {
      if (error instanceof TypeError) throw new HttpProblem(400, 'bad_request', error.message);
      throw error;
    }
  }

  async #known(token: string): Promise<ApprovalRecord> {
    const record = await this.gate.store.get(token);
    if (record === undefined) throw unknownToken();
    return record;
  }
}

// Whether a record is one the query asked for (a store may not have filtered it).
function matches(record: ApprovalRecord, query: ApprovalQuery): boolean {
  return (
    (query.tool === undefined || record.tool === query.tool) &&
    (query.tenant === undefined || record.tenant === query.tenant)
  );
}

function cannotList(): HttpProblem {
  return new HttpProblem(501, 'not_supported', 'this store cannot list pending requests');
}

function unknownToken(): HttpProblem {
  return new HttpProblem(404, 'not_found', 'no request has this token: it is unknown or has expired');
}

// `approve` or `deny` said no: the record tells why.
function answeredOtherwise(record: ApprovalRecord | undefined, asked: 'approve' | 'deny'): HttpProblem {
  if (record === undefined) return unknownToken();
  if (record.status === 'denied') {
    return new HttpProblem(409, 'conflict', 'this request was already denied');
  }
  if (record.status === 'approved') {
    const by = record.approvedBy ?? 'a reviewer';
    return asked === 'deny'
      ? new HttpProblem(409, 'conflict', `this request was already approved by ${by}`)
      : new HttpProblem(409, 'conflict', `this request was already approved by ${by}, for other args`);
  }
  return new HttpProblem(409, 'conflict', 'the store did not take the answer; reload and try again');
}

// What `gate.approve` threw, as a status: the schema's verdict on edited args is the person's to fix.
function approveRefusal(error: unknown): unknown {
  if (isDispatchError(error)) {
    if (error.kind === 'schema') return new HttpProblem(422, 'schema', error.message);
    if (error.kind === 'not_found') return new HttpProblem(404, 'not_found', error.message);
  }
  if (error instanceof TypeError) return new HttpProblem(501, 'not_supported', error.message);
  return error;
}

function parseCursor(text: string): ListCursor {
  try {
    const parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<ListCursor>;
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      typeof parsed.after === 'string' &&
      typeof parsed.at === 'number' &&
      (parsed.page === undefined || typeof parsed.page === 'string')
    ) {
      return parsed as ListCursor;
    }
  } catch {
    // Reported below, as any cursor the console did not give.
  }
  throw new HttpProblem(400, 'bad_request', 'cursor must be one a page of this console gave');
}

// Where to go on in a page read again: after the last request answered, or, when it has been
// decided meanwhile, at the first request no older than it (one may be shown twice, none lost).
function resumeIndex(items: readonly ApprovalRecord[], cursor: ListCursor): number {
  const at = items.findIndex((record) => record.token === cursor.after);
  if (at !== -1) return at + 1;
  const later = items.findIndex((record) => (record.createdAt ?? 0) >= cursor.at);
  return later === -1 ? items.length : later;
}
