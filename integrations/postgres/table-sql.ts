/**
 * The receipts table: its name, checked and quoted, and the migration that creates it.
 * @module
 */

/**
 * The table `postgresReceiptStore` uses when it is given none.
 *
 * @example
 * receiptTableSql(defaultReceiptTable);
 */
export const defaultReceiptTable = 'tool_dispatcher_receipts';

// Room left in PostgreSQL's 63-byte identifiers for the index suffixes below.
const tableName = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;
const schemaName = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** A table name split into its schema (if any) and its name, both checked. */
export interface ReceiptTable {
  /** The quoted, schema-qualified name to put in SQL. */
  readonly quoted: string;
  /** The bare table name, the stem of its indexes' names. */
  readonly name: string;
}

/**
 * Checks `table` (`name` or `schema.name`: letters, digits and `_`, not starting with a digit,
 * the name at most 48 characters) and quotes it; a `TypeError` naming `table` otherwise.
 *
 * @example
 * receiptTable('audit.receipts').quoted; // '"audit"."receipts"'
 */
export function receiptTable(table: unknown): ReceiptTable {
  const parts = typeof table === 'string' ? table.split('.') : [];
  const name = parts.at(-1);
  const schema = parts.length === 2 ? parts[0] : undefined;
  const valid =
    name !== undefined &&
    tableName.test(name) &&
    (parts.length === 1 || (schema !== undefined && schemaName.test(schema)));
  if (!valid) {
    throw new TypeError(
      `table must be a PostgreSQL name or schema.name (letters, digits, _; at most 48 characters), got ${JSON.stringify(String(table))}`,
    );
  }
  return { quoted: parts.map((part) => `"${part}"`).join('.'), name };
}

/**
 * The migration that creates the receipts table `table` and its two indexes (the operator's
 * in-doubt query, and receipts by tool), and adds the columns later versions need to a table
 * made before (`preview`, `resolution`); safe to run again.
 *
 * @param table - The table, `name` or `schema.name`. @default 'tool_dispatcher_receipts'
 * @throws TypeError naming `table` for a name that is not a plain PostgreSQL identifier.
 * @example
 * await pool.query(receiptTableSql('tool_dispatcher_receipts'));
 */
export function receiptTableSql(table: string = defaultReceiptTable): string {
  const { quoted, name } = receiptTable(table);
  return `CREATE TABLE IF NOT EXISTS ${quoted} (
  key text PRIMARY KEY,
  tool text NOT NULL,
  status text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'in_doubt')),
  attempts integer NOT NULL CHECK (attempts >= 0),
  started_at bigint NOT NULL,
  ended_at bigint,
  outcome_window text,
  settled_by text CHECK (settled_by IN ('handler', 'reconcile')),
  evidence jsonb,
  recorded_at timestamptz NOT NULL DEFAULT now()
);
-- Added later: the args' redacted preview, and a person's resolution (settled_by stays NULL for
-- one, so that tables made before keep their CHECK). Safe on a table made before.
ALTER TABLE ${quoted} ADD COLUMN IF NOT EXISTS preview text;
ALTER TABLE ${quoted} ADD COLUMN IF NOT EXISTS resolution jsonb;
-- An index always lives in its table's schema, so its name is never qualified.
CREATE INDEX IF NOT EXISTS "${name}_in_doubt" ON ${quoted} (started_at DESC) WHERE status = 'in_doubt';
CREATE INDEX IF NOT EXISTS "${name}_tool" ON ${quoted} (tool, started_at DESC);
`;
}
