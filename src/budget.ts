/**
 * A caller's tool-call budget: a count of attempts that concurrent dispatches draw from.
 * @module
 */

/** A tool-call budget shared by any number of dispatches; `tryConsume` may answer with a promise. */
export interface Budget {
  /** Units left (for a shared budget, the last count its store reported): a hint. */
  readonly remaining: number;
  /** Units the budget started with. */
  readonly limit: number;
  /**
   * Takes `units` if that many are left and says whether it did; never overspends.
   *
   * @param units - Units to take. @default 1
   * @param attemptId - Names this take, so that a shared budget's resend takes nothing more;
   *   an in-process budget ignores it. @default a random id, chosen by the budget
   */
  tryConsume(units?: number, attemptId?: string): boolean | Promise<boolean>;
}

/** A budget whose `tryConsume` always answers at once, as `createBudget`'s does. */
export interface LocalBudget extends Budget {
  /** Takes `units` (@default 1) if that many are left and says whether it did. */
  tryConsume(units?: number): boolean;
}

/**
 * Makes a budget of `toolCalls` handler attempts, to share between dispatches.
 *
 * @param toolCalls - Attempts allowed in all; `Infinity` for no limit.
 * @throws TypeError when `toolCalls` is negative or not a number.
 * @example
 * const budget = createBudget(20);
 * await dispatcher.dispatch('search.web', { query: 'x' }, { budget });
 * console.log(budget.remaining); // 19 when the first attempt succeeded
 */
export function createBudget(toolCalls: number): LocalBudget {
  if (typeof toolCalls !== 'number' || !(toolCalls >= 0)) {
    throw new TypeError(`toolCalls must be a number >= 0, got ${String(toolCalls)}`);
  }
  let remaining = toolCalls;
  const budget = {
    get remaining() {
      return remaining;
    },
    get limit() {
      return toolCalls;
    },
    tryConsume(units = 1) {
      if (typeof units !== 'number' || !(units > 0)) {
        throw new TypeError(`units must be a number > 0, got ${String(units)}`);
      }
      if (remaining < units) return false;
      remaining -= units;
      return true;
    },
  };
  return budget;
}

/** Whether a value looks like a `Budget`, from any implementation. */
export function isBudget(value: unknown): value is Budget {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Budget).tryConsume === 'function' &&
    typeof (value as Budget).remaining === 'number'
  );
}
