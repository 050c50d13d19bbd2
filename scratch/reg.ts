import { quantileOf, replay } from '../bench/autopilot/replay.js';
import { makeTrace } from '../bench/autopilot/traces.js';
const trace = makeTrace('steady', { seed: 34, calls: 7_500, ratePerSecond: 25 });
const knobs = { timeout: false, hedge: false, retryBudget: false } as const;
const lim: string[] = []; let last = -1;
const a = await replay(trace, { autopilot: { ...knobs, concurrency: { min: 1, max: 64 } }, concurrencyMax: 64,
  onSettled: (_c, _o, at, p) => { const l = p.snapshot()?.concurrency; if (l !== last) { lim.push(`${Math.round(at)}:${l}`); last = l ?? -1; } } });
const f = await replay(trace, { autopilot: { ...knobs, concurrency: false }, concurrencyMax: 64 });
console.log(quantileOf(a.latencyMs, .99), quantileOf(f.latencyMs, .99));
console.log(lim.join(' '));
