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

/** Throws unless `value` is an object or undefined; returns it or `{}`. */
export function optionsObject<T extends object>(factory: string, value: T | undefined): T {
  if (value === undefined) return {} as T;
  if (typeof value !== 'object' || value === null) {
    throw new TypeError(`${factory}() options must be an object, got ${String(value)}`);
  }
  return value;
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
