/** @module regression: the fleet's cap check called an execution whose slot lease had lapsed a slot granted twice */
import { describe, expect, it } from 'vitest';
import { check, parseLog, type RunFacts } from '../fleet/invariants.js';

const facts: RunFacts = {
  keys: ['k1', 'k2', 'k3'],
  killed: new Set(),
  survivors: ['w1', 'w2'],
  ttlMs: 60_000,
  leaseMs: 400,
  fleetMax: 2,
  strictCap: true,
};

// Three executions overlap at 15 ms on a fleet cap of two; every caller got its own result.
const overlapping = [
  'S k1 t1 w1 0',
  'S k2 t2 w1 5',
  'S k3 t3 w2 10',
  'E k1 t1 w1 20',
  'E k2 t2 w1 25',
  'E k3 t3 w2 30',
  ...['w1', 'w2'].flatMap((worker) => [
    `R k1 t1 ${worker} 40`,
    `R k2 t2 ${worker} 41`,
    `R k3 t3 ${worker} 42`,
  ]),
];

describe('the fleet cap check', () => {
  it('fails a run where more executions ran at once than the cap, with no lapse to explain it', () => {
    const verdict = check(parseLog(overlapping.join('\n')), facts);
    expect(verdict.maxConcurrent).toBe(3);
    expect(verdict.problems).toEqual([
      '3 executions ran at once, over the fleet cap of 2, at 10.00: w1 k1 0.00–20.00; w1 k2 5.00–25.00; w2 k3 10.00–30.00',
    ]);
  });

  it('leaves out an execution whose slot lease lapsed while it ran (the gate reports it, by design)', () => {
    const log = [...overlapping, 'Q k1 t1 w1 12'].join('\n');
    const verdict = check(parseLog(log), facts);
    expect(verdict.slotLost).toBe(1);
    expect(verdict.maxConcurrent).toBe(2);
    expect(verdict.problems).toEqual([]);
  });
});
