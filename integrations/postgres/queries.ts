/**
 * The receipt store's statements for one table, and the mapping between rows and receipts.
 * @module
 */

import { createHash } from 'node:crypto';
import { toJsonSafe } from '../../src/index.js';
import type { Receipt, ReceiptQuery } from '../../index.js';

const statuses: ReadonlySet<string> = new Set(['running', 'succeeded', 'failed', 'in_doubt']);
const columns =
  'key, tool, status, attempts, started_at, ended_at, outcome_window, settled_by, evidence, preview, resolution';

// The columns' types, in `columns` order: `record` sends each column as one array of its type.
const columnTypes = [
  'text',
  'text',
  'text',
  'integer',
  'bigint',
  'bigint',
  'text',
  'text',
  'jsonb',
  'text',
  'jsonb',
];

/**
 * The statements of one receipts table (its quoted name given), built once.
 *
 * @example
 * const queries = new ReceiptQueries('"tool_dispatcher_receipts"');
 * await pool.query(queries.record, queries.columnsOf([queries.valuesOf(receipt)]));
 */
export class ReceiptQueries {
  readonly get: string;
  /**
   * The upsert of any number of receipts with distinct keys, their columns as arrays: one
   * statement text whatever the batch size, and eleven parameters however many rows.
   */
  readonly record: string;
  readonly #select: string;

  readonly #named: boolean;
  readonly #digest: string;

  /** `named`: `statement()` gives node-postgres named statements, else plain text. */
  constructor(table: string, named = false) {
    this.#named = named;
    this.#digest = createHash('sha256').update(table).digest('hex').slice(0, 16);
    this.get = `SELECT ${columns} FROM ${table} WHERE key = $1`;
    const arrays = columnTypes.map((type, column) => `$${column + 1}::${type}[]`);
    this.record = `INSERT INTO ${table} (${columns}) SELECT * FROM unnest(${arrays.join(', ')})
ON CONFLICT (key) DO UPDATE SET tool = EXCLUDED.tool, status = EXCLUDED.status, attempts = EXCLUDED.attempts,
  started_at = EXCLUDED.started_at, ended_at = EXCLUDED.ended_at, outcome_window = EXCLUDED.outcome_window,
  settled_by = EXCLUDED.settled_by, evidence = EXCLUDED.evidence, preview = EXCLUDED.preview,
  resolution = EXCLUDED.resolution, recorded_at = now()`;
    this.#select = `SELECT ${columns} FROM ${table}`;
  }

  /**
   * `get` or `record` with its parameters: a named statement (one name per table and text), or
   * the text alone when statements are not named.
   */
  statement(which: 'get' | 'record', values: unknown[]): { name?: string; text: string; values: unknown[] } {
    const text = this[which];
    if (!this.#named) return { text, values };
    // One name per text: two stores on two tables never share a prepared statement.
    return { name: `tool_dispatcher_${which}_${this.#digest}`, text, values };
  }

  /** The `record` parameters of `rows` (each a `valuesOf`, keys distinct): one array per column. */
  columnsOf(rows: readonly (readonly unknown[])[]): unknown[][] {
    const arrays: unknown[][] = columnTypes.map(() => []);
    for (const row of rows) row.forEach((value, column) => arrays[column]?.push(value));
    return arrays;
  }

  /** The `list` statement and its parameters for `query`; a `TypeError` for a bad field. */
  list(query: ReceiptQuery = {}): { text: string; values: unknown[] } {
    if (typeof query !== 'object' || query === null) throw new TypeError('list query must be an object');
    const { inDoubt, status, tool, limit = 100 } = query;
    const where: string[] = [];
    const values: unknown[] = [];
    if (inDoubt !== undefined) {
      if (typeof inDoubt !== 'boolean') throw new TypeError('inDoubt must be a boolean');
      where.push(inDoubt ? `status = 'in_doubt'` : `status <> 'in_doubt'`);
    }
    if (status !== undefined) {
      if (!statuses.has(status)) throw new TypeError(`status must be one of ${[...statuses].join(', ')}`);
      values.push(status);
      where.push(`status = $${values.length}`);
    }
    if (tool !== undefined) {
      if (typeof tool !== 'string') throw new TypeError('tool must be a string');
      values.push(tool);
      where.push(`tool = $${values.length}`);
    }
    if (!Number.isInteger(limit) || limit < 1)
      throw new TypeError(`limit must be an integer >= 1, got ${limit}`);
    values.push(limit);
    const filter = where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`;
    return { text: `${this.#select}${filter} ORDER BY started_at DESC, key LIMIT $${values.length}`, values };
  }

  /** The row of `receipt`, in `columns` order; a `TypeError` naming the field that is wrong. */
  valuesOf(receipt: Receipt): unknown[] {
    const {
      key,
      tool,
      status,
      attempts,
      startedAt,
      endedAt,
      window,
      settledBy,
      evidence,
      preview,
      resolution,
    } = receipt;
    if (typeof key !== 'string' || key === '') throw new TypeError('receipt.key must be a non-empty string');
    if (typeof tool !== 'string') throw new TypeError('receipt.tool must be a string');
    // Refused here, alone: in the batch it would fail every receipt sent with it.
    if (key.includes('\u0000')) throw new TypeError(nulRefused('receipt.key'));
    if (tool.includes('\u0000')) throw new TypeError(nulRefused('receipt.tool'));
    if (!statuses.has(status))
      throw new TypeError(`receipt.status must be one of ${[...statuses].join(', ')}`);
    if (!Number.isInteger(attempts) || attempts < 0)
      throw new TypeError('receipt.attempts must be an integer >= 0');
    if (!Number.isFinite(startedAt)) throw new TypeError('receipt.startedAt must be a finite number');
    if (endedAt !== undefined && !Number.isFinite(endedAt)) {
      throw new TypeError('receipt.endedAt must be a finite number');
    }
    const proof = evidence === undefined ? undefined : toJsonSafe(evidence);
    if (preview !== undefined && typeof preview !== 'string')
      throw new TypeError('receipt.preview must be a string');
    const resolved = resolution === undefined ? undefined : toJsonSafe(resolution);
    return [
      key,
      tool,
      status,
      attempts,
      Math.round(startedAt),
      endedAt === undefined ? null : Math.round(endedAt),
      window ?? null,
      // A person's settlement is told by `resolution`: the column's CHECK predates it.
      settledBy === undefined || settledBy === 'person' ? null : settledBy,
      proof === undefined ? null : jsonbText(JSON.stringify(proof)),
      // JSON text never holds a raw NUL, but a receipt recorded by hand might.
      preview === undefined ? null : preview.replaceAll('\u0000', '\\u0000'),
      resolved === undefined ? null : jsonbText(JSON.stringify(resolved)),
    ];
  }

  /** The receipt a row holds; absent columns stay absent fields. */
  receiptOf(row: Record<string, unknown>): Receipt {
    // Built field by field, so an absent column stays an absent field.
    const receipt: { -readonly [Field in keyof Receipt]: Receipt[Field] } = {
      key: String(row.key),
      tool: String(row.tool),
      status: row.status as Receipt['status'],
      attempts: Number(row.attempts),
      // bigint columns arrive as strings from pg, to keep precision a JS number may not have.
      startedAt: Number(row.started_at),
    };
    if (row.ended_at !== null && row.ended_at !== undefined) receipt.endedAt = Number(row.ended_at);
    if (typeof row.outcome_window === 'string')
      receipt.window = row.outcome_window as NonNullable<Receipt['window']>;
    if (typeof row.settled_by === 'string')
      receipt.settledBy = row.settled_by as NonNullable<Receipt['settledBy']>;
    if (row.evidence !== null && row.evidence !== undefined) receipt.evidence = row.evidence;
    if (typeof row.preview === 'string') receipt.preview = row.preview;
    if (typeof row.resolution === 'object' && row.resolution !== null) {
      receipt.resolution = row.resolution as NonNullable<Receipt['resolution']>;
      receipt.settledBy = 'person';
    }
    return receipt;
  }
}

/** The message of a text field PostgreSQL cannot store. */
export function nulRefused(field: string): string {
  return `${field} contains U+0000 (NUL), which a PostgreSQL text column cannot hold`;
}

// A NUL escape in JSON text, not itself escaped (preceded by an even run of backslashes).
const jsonNul = /(?<!\\)((?:\\\\)*)\\u0000/g;

/**
 * JSON text that `jsonb` accepts: jsonb refuses the NUL escape (`\u0000`), so a NUL in evidence
 * is stored as the six characters `\u0000`.
 *
 * @example
 * jsonbText(JSON.stringify({ note: 'a\u0000b' })); // '{"note":"a\\u0000b"}'
 */
export function jsonbText(json: string): string {
  return json.includes('\\u0000') ? json.replace(jsonNul, '$1\\\\u0000') : json;
}
