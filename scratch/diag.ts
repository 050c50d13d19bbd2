import { makeTrace, type TraceName } from '../bench/autopilot/traces.js';
import { replay, quantileOf } from '../bench/autopilot/replay.js';
import { pilotConfig } from '../bench/autopilot/scenarios.js';

const name = process.argv[2] as TraceName;
const calls = Number(process.argv[3] ?? 20000);
const opts = process.argv[4] ? JSON.parse(process.argv[4]) : {};
const trace = makeTrace(name, { seed: 34, calls });
const config = pilotConfig();
let hedged = 0, retried = 0, cut = 0;
const limits: [number, number][] = [];
let lastAt = -1e9;
const options = { ...config.options, ...opts };
const pilot = await replay(trace, {
  autopilot: options, concurrencyMax: 64,
  onSettled: (_c, o, at, view) => {
    const p = (o as any).policy ?? (o as any).error?.policy;
    if (p?.hedged) hedged++; if (p?.retried) retried++; if (p?.cutOff) cut++;
    if (at - lastAt > 5000) { lastAt = at; const s = view.snapshot(); limits.push([Math.round(at/1000), s?.concurrency ?? -1]); }
  },
});
const fixed = process.env.NOSTATIC ? undefined : await replay(trace, name === 'capacity' ? { concurrencyMax: 8 } : {});
const p = (r: any, q: number, inc?: (c: number) => boolean) => quantileOf(r.latencyMs, q, inc).toFixed(0);
console.log(name, 'attempts', pilot.attempts, 'extra', (pilot.attempts / calls - 1).toFixed(4), 'hedged', hedged, 'retried', retried, 'cut', cut);
console.log('pilot p99', p(pilot, .99), 'p999', p(pilot, .999), fixed ? `static p99 ${p(fixed, .99)} p999 ${p(fixed, .999)} ratio ${(quantileOf(pilot.latencyMs,.99)/quantileOf(fixed.latencyMs,.99)).toFixed(3)}` : '');
if (name === 'capacity') {
  const sw = 0.5 * trace.arrivals[calls - 1]!;
  for (const ph of [0, 1]) { const inc = (c: number) => ((trace.arrivals[c]! < sw ? 0 : 1) === ph); console.log('phase', ph, 'pilot p99', p(pilot, .99, inc), fixed ? 'static8 p99 ' + p(fixed, .99, inc) : ''); }
}
if (process.env.LIMITS) console.log(limits.map(([t, l]) => `${t}:${l}`).join(' '));
