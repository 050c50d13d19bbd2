// Reads the fleet's logs and checks the scale-out invariants: an outcome for every surviving
// caller, one execution's result per key, every extra execution explained, no overlap, the cap.

/** One log line: `<type> <key> <value> <worker> <time ms>`. */
export interface Entry {
  type: string;
  key: string;
  value: string;
  worker: string;
  at: number;
}

export function parseLog(text: string): Entry[] {
  const entries: Entry[] = [];
  for (const raw of text.split('\n')) {
    const parts = raw.trim().split(' ');
    if (parts.length < 5) continue;
    const at = Number(parts[parts.length - 1]);
    const worker = parts[parts.length - 2] as string;
    entries.push({
      type: parts[0] as string,
      key: parts[1] as string,
      value: parts.slice(2, -2).join(' '),
      worker,
      at,
    });
  }
  return entries.sort((a, b) => a.at - b.at);
}

/** What the runner knows besides the logs. */
export interface RunFacts {
  keys: string[];
  /** Workers that were SIGKILLed (their callers do not count). */
  killed: ReadonlySet<string>;
  /** Workers expected to finish (not killed). */
  survivors: readonly string[];
  ttlMs: number;
  leaseMs: number;
  fleetMax: number;
  /** When Redis was restarted empty, and how long keyed calls then fail closed. */
  reset?: { at: number; windowMs: number };
  /**
   * Whether log-based cap checks hold: no idempotency lease can be lost in this scenario. An
   * execution whose slot lease lapsed while it ran (a `Q` line) is over the cap by design, and the
   * check leaves it out.
   */
  strictCap: boolean;
}

export interface Verdict {
  executions: number;
  extra: { crash: number; leaseLost: number; ttl: number; reset: number; unexplained: number };
  missing: number;
  failures: Record<string, number>;
  split: number;
  splitUnexplained: number;
  overlaps: number;
  maxConcurrent: number;
  /** Executions whose fleet slot lease lapsed while they ran (left out of the cap check). */
  slotLost: number;
  hits: Record<string, number>;
  problems: string[];
}

interface Execution {
  key: string;
  token: string;
  worker: string;
  start: number;
  end: number | undefined;
  lost: boolean;
  slotLost: boolean;
}

export function check(entries: Entry[], facts: RunFacts): Verdict {
  const problems: string[] = [];
  // A lease-lost flag names the key and the worker whose execution of it lost the lease.
  const lost = new Set(entries.filter((e) => e.type === 'L').map((e) => `${e.key} ${e.worker}`));
  // A slot-lost line names the execution (by its token) whose fleet slot lapsed while it ran.
  const slotLost = new Set(entries.filter((e) => e.type === 'Q').map((e) => e.value));
  const ends = new Map(entries.filter((e) => e.type === 'E').map((e) => [e.value, e.at]));
  // Executions whose result some caller got: it was stored (or handed over in process).
  const answered = new Set(entries.filter((e) => e.type === 'R').map((e) => e.value));
  const executions: Execution[] = entries
    .filter((e) => e.type === 'S')
    .map((e) => ({
      key: e.key,
      token: e.value,
      worker: e.worker,
      start: e.at,
      end: ends.get(e.value),
      lost: lost.has(`${e.key} ${e.worker}`),
      slotLost: slotLost.has(e.value),
    }));
  const byKey = new Map<string, Execution[]>();
  for (const execution of executions) {
    const list = byKey.get(execution.key) ?? [];
    list.push(execution);
    byKey.set(execution.key, list);
  }

  const extra = { crash: 0, leaseLost: 0, ttl: 0, reset: 0, unexplained: 0 };
  // Keys whose extra executions are all explained: different results for them are expected.
  const explained = new Set<string>();
  let overlaps = 0;
  for (const [key, list] of byKey) {
    let allExplained = true;
    for (let i = 1; i < list.length; i++) {
      const x = list[i] as Execution;
      const before = list.slice(0, i);
      // A killed leader: mid-call, or after its handler ended but before its result was stored.
      const crashed = (p: Execution) =>
        facts.killed.has(p.worker) && (p.end === undefined || !answered.has(p.token));
      if (before.some(crashed)) extra.crash += 1;
      // Its own lease lost (this worker paused after it looked) or an earlier leader's.
      else if (x.lost || before.some((p) => p.lost)) extra.leaseLost += 1;
      else if (before.every((p) => p.end !== undefined && x.start - p.end > facts.ttlMs)) extra.ttl += 1;
      else if (facts.reset !== undefined && x.start > facts.reset.at + facts.reset.windowMs - 50)
        extra.reset += 1;
      else {
        allExplained = false;
        extra.unexplained += 1;
        problems.push(
          `unexplained execution of ${key} by ${x.worker} at ${x.start.toFixed(1)} (${i + 1} executions)`,
        );
      }
    }
    if (allExplained) explained.add(key);
    const clean = list.filter((e) => !e.lost && !facts.killed.has(e.worker));
    for (let i = 0; i < clean.length; i++) {
      for (let j = i + 1; j < clean.length; j++) {
        const a = clean[i] as Execution;
        const b = clean[j] as Execution;
        if (b.start < (a.end ?? Infinity) && a.start < (b.end ?? Infinity)) {
          overlaps += 1;
          problems.push(`executions of ${key} overlap: ${a.worker} and ${b.worker}`);
        }
      }
    }
  }

  const outcomes = entries.filter((e) => (e.type === 'R' || e.type === 'F') && !facts.killed.has(e.worker));
  let missing = 0;
  for (const worker of facts.survivors) {
    const answered = new Set(outcomes.filter((e) => e.worker === worker).map((e) => e.key));
    for (const key of facts.keys) {
      if (!answered.has(key)) {
        missing += 1;
        if (missing <= 5) problems.push(`${worker} has no outcome for ${key}`);
      }
    }
  }
  const failures: Record<string, number> = {};
  for (const e of outcomes) if (e.type === 'F') failures[e.value] = (failures[e.value] ?? 0) + 1;

  let split = 0;
  let splitUnexplained = 0;
  const tokens = new Set(executions.map((e) => e.token));
  for (const key of facts.keys) {
    const results = new Set(outcomes.filter((e) => e.type === 'R' && e.key === key).map((e) => e.value));
    for (const token of results)
      if (!tokens.has(token)) problems.push(`${key} answered with ${token}, which no execution produced`);
    if (results.size > 1) {
      split += 1;
      if (!explained.has(key)) {
        splitUnexplained += 1;
        problems.push(`${key} answered with ${results.size} different executions' results`);
      }
    }
  }

  // The most executions running at once, from the logs (a crashed one until its lease ends).
  const counted = executions.filter((e) => !e.lost && !e.slotLost);
  const endOf = (e: Execution) => e.end ?? e.start + facts.leaseMs;
  const events: Array<[number, number]> = [];
  for (const e of counted) {
    events.push([e.start, 1]);
    events.push([endOf(e), -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let maxConcurrent = 0;
  let busiestAt = 0;
  for (const [at, delta] of events) {
    running += delta;
    if (running > maxConcurrent) {
      maxConcurrent = running;
      busiestAt = at;
    }
  }
  if (facts.strictCap && maxConcurrent > facts.fleetMax) {
    // Which executions, so a failure says whether a slot was granted twice or clocks disagree.
    const during = counted
      .filter((e) => e.start <= busiestAt && endOf(e) > busiestAt)
      .map((e) => `${e.worker} ${e.key} ${e.start.toFixed(2)}–${endOf(e).toFixed(2)}`);
    problems.push(
      `${maxConcurrent} executions ran at once, over the fleet cap of ${facts.fleetMax}, at ${busiestAt.toFixed(2)}: ${during.join('; ')}`,
    );
  }
  if (extra.unexplained > 0 || splitUnexplained > 0 || overlaps > 0 || missing > 0) {
    // Already listed above.
  }
  const hits: Record<string, number> = {};
  for (const worker of facts.survivors) {
    const led = executions.filter((e) => e.worker === worker).length;
    const answered = outcomes.filter((e) => e.worker === worker && e.type === 'R').length;
    hits[worker] = answered - led;
  }
  return {
    executions: executions.length,
    extra,
    missing,
    failures,
    split,
    splitUnexplained,
    overlaps,
    maxConcurrent,
    slotLost: executions.filter((e) => e.slotLost).length,
    hits,
    problems,
  };
}
