/**
 * Option checks for middleware factories: each failure is a TypeError naming the option.
 * @module
 */

/** Throws unless `value` is an integer >= `min`. */
export function requireInteger(name: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new TypeError(`${name} must be an integer >= ${min}, got ${String(value)}`);
  }
  return value;
}

/** Throws unless `value` is a number >= `min` (Infinity allowed when `allowInfinity`). */
export function requireNumber(
  name: string,
  value: unknown,
  min: number,
  { allowInfinity = false, exclusive = false } = {},
): number {
  const ok =
    typeof value === 'number' &&
    (exclusive ? value > min : value >= min) &&
    (allowInfinity || Number.isFinite(value));
  if (!ok) {
    const bound = `${exclusive ? '>' : '>='} ${min}`;
    throw new TypeError(
      `${name} must be a ${allowInfinity ? '' : 'finite '}number ${bound}, got ${String(value)}`,
    );
  }
  return value as number;
}

/** Throws unless `value` is a function. */
export function requireFunction<T>(name: string, value: T): T {
  if (typeof value !== 'function') throw new TypeError(`${name} must be a function, got ${typeof value}`);
  return value;
}

/**
 * Throws unless `value` is an object or undefined; returns it or `{}`. Given `known` (from
 * `optionKeys`), a key outside it is a TypeError naming the nearest known one (see
 * `rejectUnknownKeys`).
 */
export function optionsObject<T extends object>(
  factory: string,
  value: T | undefined,
  known?: readonly string[],
): T {
  if (value === undefined) return {} as T;
  if (typeof value !== 'object' || value === null) {
    throw new TypeError(`${factory}() options must be an object, got ${String(value)}`);
  }
  if (known !== undefined) rejectUnknownKeys(factory, value, known);
  return value;
}

/**
 * The keys of an options type, listed once beside it: the compiler holds the list to exactly the
 * type's keys, so a field added to the interface must be added here too.
 *
 * @example
 * const retryOptionKeys = optionKeys<RetryOptions>({ maxAttempts: true, baseDelayMs: true });
 */
export function optionKeys<Options extends object>(
  keys: { readonly [Key in keyof Required<Options>]: true },
): readonly string[] {
  return Object.freeze(Object.keys(keys));
}

/**
 * Throws a TypeError for the first key of `options` that is not one of `known`, naming the nearest
 * known key (a typo, a plural) or, when none is near, every known key. Runs once, when a factory
 * is called: a misspelt option is never silently ignored.
 *
 * @param factory - What took the options, as the message names it: a function's name such as
 *   `defaultStack` (the message adds `()`), or a phrase such as `register() of "db.get_user"`.
 * @param what - What a key is called in the message. @default 'option'
 * @example
 * rejectUnknownKeys('defaultStack', { approvalz: gate }, ['registry', 'approvals']);
 * // TypeError: defaultStack() got an unknown option "approvalz"; did you mean "approvals"?
 */
export function rejectUnknownKeys(
  factory: string,
  options: object,
  known: readonly string[],
  what = 'option',
): void {
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const where = /^[\w.]+$/.test(factory) ? `${factory}()` : factory;
    const near = nearestName(key, known);
    const hint = near === undefined ? `it takes ${known.join(', ')}` : `did you mean "${near}"?`;
    throw new TypeError(`${where} got an unknown ${what} "${key}"; ${hint}`);
  }
}

/**
 * The name of `names` nearest to `given` by edit distance (ignoring case, an adjacent swap being
 * one edit), or `undefined` when none is within a third of the name's length (at least 2 edits).
 *
 * @example
 * nearestName('--timeout', ['--timeout-ms', '--config']); // '--timeout-ms'
 */
export function nearestName(given: string, names: readonly string[]): string | undefined {
  const wanted = given.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of names) {
    const distance = editDistance(wanted, name.toLowerCase());
    const limit = Math.max(2, Math.floor(Math.max(wanted.length, name.length) / 3));
    if (distance <= limit && distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}

// Optimal string alignment (Damerau–Levenshtein without repeated edits of one substring): keys are
// short, so the full table is cheap, and it runs only when a factory is given a bad key.
function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) rows.push([i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) (rows[0] as number[])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] as number[];
    const above = rows[i - 1] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        distance = Math.min(distance, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      }
      row[j] = distance;
    }
  }
  return (rows[a.length] as number[])[b.length] as number;
}

/** Throws unless `clock` has every one of `methods` as a function. */
export function requireClock(
  clock: unknown,
  methods: ReadonlyArray<'now' | 'setTimeout' | 'clearTimeout'>,
): void {
  const missing = methods.some(
    (method) => typeof (clock as Record<string, unknown> | null | undefined)?.[method] !== 'function',
  );
  if (!missing) return;
  const names = methods.map((method) => `${method}()`);
  const list =
    names.length === 1
      ? `a ${names[0]} method`
      : `${names.slice(0, -1).join(', ')} and ${names.at(-1)} methods`;
  throw new TypeError(`clock must have ${list}`);
}
