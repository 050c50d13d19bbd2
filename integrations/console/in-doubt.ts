/**
 * The in-doubt pane's source: the `in_doubt` receipts of a receipt store, "reconcile now" (the
 * tool's `reconcile`, its verdict recorded on the receipt) and "mark resolved" by a person.
 * @module
 */

import { toJsonSafe } from '../../src/index.js';
import {
  createRedactor,
  type Clock,
  type OutcomeWindow,
  type Receipt,
  type ReceiptStore,
  type Redactor,
  type Tool,
} from '../../index.js';
import {
  optionKeys,
  optionsObject,
  requireClock,
  requireInteger,
  systemClock,
} from '../../middleware/index.js';
import { previewCut } from '../../middleware/internal-kit.js';
import { InDoubtActionError, type InDoubtItem, type InDoubtResolution, type InDoubtSource } from './panes.js';

/** Options for `inDoubtDesk`. */
export interface InDoubtDeskOptions {
  /** Where the receipts are: `memoryReceiptStore()`, a Redis idempotency store's `.receipts`, `postgresReceiptStore(pool)`. */
  receipts: ReceiptStore;
  /** Where each receipt's tool is found, for its `reconcile`; without it only "mark resolved" is offered. @default none */
  registry?: {
    /** The tool registered under `name`, if any. */
    get(name: string): Tool | undefined;
  };
  /** Redacts evidence, previews and notes before they leave (and evidence before it is recorded). @default createRedactor() */
  redact?: Redactor;
  /** The receipts `list` answers when the query names no `limit`. @default 100 */
  limit?: number;
  /** The clock of `reconcile`'s timeout and of the times recorded. @default systemClock */
  clock?: Clock;
}

const inDoubtDeskOptionKeys = optionKeys<InDoubtDeskOptions>({
  receipts: true,
  registry: true,
  redact: true,
  limit: true,
  clock: true,
});

/** The most characters of a person's note a receipt keeps. */
const noteChars = 1_000;
/** The most receipts one `list` answers. */
const maxListed = 1_000;

/**
 * Makes the in-doubt pane's source over `receipts`. `list` answers the `in_doubt` receipts, most
 * recent first, evidence and previews redacted. `reconcile(key)` runs the tool's `reconcile` under
 * its `reconcileTimeoutMs` with a real `AbortSignal` and records the verdict: `committed` →
 * `succeeded`, `not_committed` → `failed` (both `settledBy: 'reconcile'`), `unknown` → still
 * `in_doubt`, with the new evidence. `reconcile` gets the args the receipt kept (its `preview`,
 * parsed; so redacted, and `undefined` when it was cut or absent) and `idempotencyKey` = the
 * receipt's key: a tool's `reconcile` should look the action up by that key. `resolve(key)`
 * records a person's "mark resolved": status `failed` (nothing known to have succeeded),
 * `settledBy: 'person'`, `resolution: { by, at, note }`; it never runs anything. Either way the
 * key leaves doubt, so a later call with it runs again. Actions on one key run one at a time in
 * this process, and each re-reads the receipt before it writes: a second "reconcile now" after the
 * first settled it fails `not_in_doubt`.
 *
 * @example
 * import { inDoubtDesk } from 'tool-dispatcher/console';
 * const desk = inDoubtDesk({ receipts: store.receipts, registry });
 * const [first] = await desk.list({ limit: 20 });
 * if (first?.canReconcile) await desk.reconcile(first.key, { by: 'ana' });
 */
export function inDoubtDesk(options: InDoubtDeskOptions): InDoubtSource {
  const given = optionsObject('inDoubtDesk', options, inDoubtDeskOptionKeys);
  const { receipts, registry, redact = createRedactor(), limit = 100, clock = systemClock } = given;
  if (
    typeof receipts !== 'object' ||
    receipts === null ||
    typeof receipts.get !== 'function' ||
    typeof receipts.record !== 'function' ||
    typeof receipts.list !== 'function'
  ) {
    throw new TypeError('receipts must be a ReceiptStore (get, record, list), e.g. memoryReceiptStore()');
  }
  if (registry !== undefined && typeof (registry as { get?: unknown } | null)?.get !== 'function') {
    throw new TypeError('registry must be a ToolRegistry (with get)');
  }
  if (typeof redact?.redact !== 'function' || typeof redact.redactValue !== 'function') {
    throw new TypeError('redact must be a redactor from createRedactor()');
  }
  requireInteger('limit', limit, 1);
  requireClock(clock, ['now', 'setTimeout', 'clearTimeout']);
  return new InDoubtDesk(receipts, registry, redact, Math.min(limit, maxListed), clock);
}

/** The desk: reads receipts, acts on one key at a time. */
class InDoubtDesk implements InDoubtSource {
  readonly #busy = new Map<string, Promise<unknown>>();
  #asked = 0;

  constructor(
    private readonly receipts: ReceiptStore,
    private readonly registry: { get(name: string): Tool | undefined } | undefined,
    private readonly redactor: Redactor,
    private readonly limit: number,
    private readonly clock: Clock,
  ) {}

  async list(
    query: { readonly tool?: string; readonly limit?: number } = {},
  ): Promise<readonly InDoubtItem[]> {
    if (typeof query !== 'object' || query === null)
      throw new InDoubtActionError('bad_input', 'query must be an object');
    const { tool, limit = this.limit } = query;
    if (tool !== undefined && (typeof tool !== 'string' || tool === '')) {
      throw new InDoubtActionError('bad_input', 'tool must be a non-empty string');
    }
    if (!Number.isInteger(limit) || limit < 1 || limit > maxListed) {
      throw new InDoubtActionError('bad_input', `limit must be an integer from 1 to ${maxListed}`);
    }
    const found = await this.receipts.list({ inDoubt: true, limit, ...(tool === undefined ? {} : { tool }) });
    return found
      .filter((receipt) => receipt.status === 'in_doubt' && (tool === undefined || receipt.tool === tool))
      .slice(0, limit)
      .map((receipt) => this.#item(receipt));
  }

  async reconcile(key: string, by: { readonly by: string }): Promise<InDoubtResolution> {
    requireKey(key);
    requireBy(by);
    return this.#oneAtATime(key, () => this.#reconcileNow(key));
  }

  async resolve(key: string, by: { readonly by: string; readonly note: string }): Promise<InDoubtResolution> {
    requireKey(key);
    requireBy(by);
    if (typeof by.note !== 'string' || by.note.trim() === '') {
      throw new InDoubtActionError('bad_input', 'a note saying why it is resolved is required');
    }
    const resolution = {
      by: this.redactor.redact(by.by).slice(0, 200),
      note: this.redactor.redact(by.note).slice(0, noteChars),
    };
    return this.#oneAtATime(key, () => this.#resolveNow(key, resolution));
  }

  #item(receipt: Receipt): InDoubtItem {
    const item: { -readonly [Field in keyof InDoubtItem]: InDoubtItem[Field] } = {
      key: receipt.key,
      tool: receipt.tool,
      window: receipt.window,
      startedAt: receipt.startedAt,
      attempts: receipt.attempts,
      canReconcile: this.#reconcileOf(receipt.tool) !== undefined,
    };
    const evidence = this.#redacted(receipt.evidence);
    if (evidence !== undefined) item.evidence = evidence;
    // Written redacted by the idempotency layer; redacted again with this desk's patterns.
    if (typeof receipt.preview === 'string') item.preview = this.redactor.redact(receipt.preview);
    return item;
  }

  #reconcileOf(tool: string): Tool | undefined {
    try {
      const found = this.registry?.get(tool);
      return typeof found?.reconcile === 'function' ? found : undefined;
    } catch {
      return undefined;
    }
  }

  #redacted(evidence: unknown): unknown {
    if (evidence === undefined) return undefined;
    try {
      return this.redactor.redactValue(toJsonSafe(evidence));
    } catch {
      return '[evidence could not be shown]';
    }
  }

  // Actions on one key queue behind each other: each then finds what the one before recorded.
  #oneAtATime<T>(key: string, action: () => Promise<T>): Promise<T> {
    const before = this.#busy.get(key) ?? Promise.resolve();
    const run = before.then(action, action);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.#busy.set(key, settled);
    void settled.then(() => {
      if (this.#busy.get(key) === settled) this.#busy.delete(key);
    });
    return run;
  }

  async #inDoubt(key: string): Promise<Receipt> {
    const receipt = await this.receipts.get(key);
    if (receipt === undefined) throw new InDoubtActionError('not_found', 'no receipt is kept for this key');
    if (receipt.status !== 'in_doubt') {
      throw new InDoubtActionError('not_in_doubt', `the receipt is ${receipt.status}, no longer in doubt`);
    }
    return receipt;
  }

  async #reconcileNow(key: string): Promise<InDoubtResolution> {
    const receipt = await this.#inDoubt(key);
    const tool = this.#reconcileOf(receipt.tool);
    if (tool === undefined) {
      throw new InDoubtActionError(
        'no_reconcile',
        `"${receipt.tool}" has no reconcile: mark it resolved instead`,
      );
    }
    const found = await this.#ask(tool, receipt);
    const evidence = this.#redacted(found.evidence);
    // Another process may have settled it meanwhile: its record stands.
    const now = await this.#inDoubt(key);
    const status =
      found.status === 'committed' ? 'succeeded' : found.status === 'not_committed' ? 'failed' : 'in_doubt';
    if (status !== 'in_doubt' || evidence !== undefined) {
      const recorded: { -readonly [Field in keyof Receipt]: Receipt[Field] } = { ...now, status };
      if (status !== 'in_doubt') {
        recorded.settledBy = 'reconcile';
        recorded.endedAt = this.clock.now();
      }
      if (evidence === undefined) delete recorded.evidence;
      else recorded.evidence = evidence;
      await this.receipts.record(recorded);
    }
    return { status, verdict: found.status, ...(evidence === undefined ? {} : { evidence }) };
  }

  async #resolveNow(key: string, resolution: { by: string; note: string }): Promise<InDoubtResolution> {
    const receipt = await this.#inDoubt(key);
    const at = this.clock.now();
    await this.receipts.record({
      ...receipt,
      status: 'failed',
      settledBy: 'person',
      endedAt: at,
      resolution: { ...resolution, at },
    });
    const evidence = this.#redacted(receipt.evidence);
    return { status: 'failed', verdict: 'resolved', ...(evidence === undefined ? {} : { evidence }) };
  }

  // Runs `reconcile` under its timeout with a signal that aborts at it; never rejects.
  async #ask(tool: Tool, receipt: Receipt): Promise<{ status: Verdict; evidence: unknown }> {
    const { reconcile, reconcileTimeoutMs = 10_000 } = tool;
    if (reconcile === undefined) return { status: 'unknown', evidence: undefined };
    const controller = new AbortController();
    let handle: unknown;
    const timedOut = new Promise<{ status: Verdict; evidence: unknown }>((resolve) => {
      if (!(reconcileTimeoutMs < Infinity)) return;
      handle = this.clock.setTimeout(() => {
        resolve({ status: 'unknown', evidence: `no answer within ${reconcileTimeoutMs} ms` });
        controller.abort(new Error(`reconcile gave no answer within ${reconcileTimeoutMs} ms`));
      }, reconcileTimeoutMs);
    });
    const context = {
      idempotencyKey: receipt.key,
      callId: `console-reconcile-${++this.#asked}`,
      attempt: receipt.attempts,
      window: receipt.window ?? ('attempt_timeout' satisfies OutcomeWindow),
      signal: controller.signal,
    };
    const ask = reconcile as unknown as (args: unknown, ctx: typeof context) => unknown;
    const asked = (async () => verdictOf(await ask(argsOf(receipt), context)))().catch(() => ({
      status: 'unknown' as const,
      evidence: undefined,
    }));
    try {
      return await Promise.race([asked, timedOut]);
    } finally {
      if (handle !== undefined) this.clock.clearTimeout(handle);
    }
  }
}

type Verdict = 'committed' | 'not_committed' | 'unknown';

/** The args a receipt kept: its preview parsed, when whole; else `undefined`. */
function argsOf(receipt: Receipt): unknown {
  const { preview } = receipt;
  if (typeof preview !== 'string' || preview.endsWith(previewCut)) return undefined;
  try {
    return JSON.parse(preview) as unknown;
  } catch {
    return undefined;
  }
}

function verdictOf(verdict: unknown): { status: Verdict; evidence: unknown } {
  if (verdict === 'committed' || verdict === 'not_committed' || verdict === 'unknown') {
    return { status: verdict, evidence: undefined };
  }
  if (typeof verdict === 'object' && verdict !== null) {
    const { status, evidence } = verdict as { status?: unknown; evidence?: unknown };
    if (status === 'committed' || status === 'not_committed' || status === 'unknown')
      return { status, evidence };
  }
  return { status: 'unknown', evidence: undefined };
}

function requireKey(key: unknown): void {
  if (typeof key !== 'string' || key === '')
    throw new InDoubtActionError('bad_input', 'key must be a non-empty string');
}

function requireBy(by: unknown): void {
  if (typeof (by as { by?: unknown } | null)?.by !== 'string' || (by as { by: string }).by === '') {
    throw new InDoubtActionError('bad_input', 'by must name who acts');
  }
}
