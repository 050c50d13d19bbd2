import { makeTrace } from '../bench/autopilot/traces.js';
import { replay } from '../bench/autopilot/replay.js';
import { pilotConfig } from '../bench/autopilot/scenarios.js';
const calls = Number(process.argv[2] ?? 50000);
const opts = process.argv[3] ? JSON.parse(process.argv[3]) : {};
const trace = makeTrace('brownout', { seed: 34, calls });
const last = trace.arrivals[calls - 1]!;
const [s, e] = [0.4 * last, 0.6 * last];
const inB = (c: number) => trace.arrivals[c]! >= s && trace.arrivals[c]! < e;
let n = 0, hedged = 0, retried = 0, cut = 0, spent = 0;
const byMin = new Map<number, number[]>();
const pilot = await replay(trace, { autopilot: { ...pilotConfig().options, ...opts }, concurrencyMax: 64,
  onSettled: (c, o) => { if (!inB(c)) return; n++; const p = (o as any).policy ?? (o as any).error?.policy;
    if (p?.hedged) hedged++; if (p?.retried) retried++; if (p?.cutOff) cut++; if (p?.budget === 'spent') spent++;
  } });
let att = 0; const perMin = new Map<number, [number, number]>();
for (let c = 0; c < calls; c++) if (inB(c)) { att += pilot.attemptsByCall[c]!; const m = Math.floor((trace.arrivals[c]! - s) / 60000); const a = perMin.get(m) ?? [0, 0]; a[0]++; a[1] += pilot.attemptsByCall[c]!; perMin.set(m, a); }
console.log('calls', n, 'attempts/call', (att / n).toFixed(4), 'hedged', hedged, 'retried', retried, 'cut', cut, 'spent', spent);
console.log([...perMin].map(([m, [c, a]]) => `${m}:${(a / c).toFixed(2)}`).join(' '));
