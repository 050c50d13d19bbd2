/**
 * Seeded randomness for the autopilot simulations: the same seed gives the same trace on every
 * machine and Node version (integer arithmetic only, no `Math.random`).
 * @module
 */

/** A seeded stream of random numbers. */
export interface Random {
  /** A number in [0, 1). */
  next(): number;
  /** A number in [low, high). */
  uniform(low: number, high: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** A standard normal number (mean 0, deviation 1). */
  normal(): number;
  /** An exponential number of mean `mean`. */
  exponential(mean: number): number;
  /** A new independent stream derived from this one (for one trace's arrivals apart from its latencies). */
  fork(): Random;
}

/**
 * A mulberry32 stream seeded with `seed`: 32 bits of state, a period of 2^32, quality ample for
 * Monte-Carlo traces of a few million draws. The seed goes through splitmix32 first, so nearby
 * seeds give unrelated streams.
 *
 * @example
 * const random = seededRandom(42);
 * const latencyMs = 200 * Math.exp(0.4 * random.normal());
 */
export function seededRandom(seed: number): Random {
  let state = splitmix32(seed >>> 0);
  // Box–Muller makes two normals per pair of uniforms; the second waits here.
  let spareNormal: number | undefined;
  const next = (): number => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const random: Random = {
    next,
    uniform: (low, high) => low + (high - low) * next(),
    chance: (p) => next() < p,
    normal: () => {
      if (spareNormal !== undefined) {
        const value = spareNormal;
        spareNormal = undefined;
        return value;
      }
      // 1 − next() is in (0, 1]: the logarithm stays finite.
      const radius = Math.sqrt(-2 * Math.log(1 - next()));
      const angle = 2 * Math.PI * next();
      spareNormal = radius * Math.sin(angle);
      return radius * Math.cos(angle);
    },
    exponential: (mean) => -mean * Math.log(1 - next()),
    fork: () => seededRandom(Math.floor(next() * 4_294_967_296)),
  };
  return random;
}

/**
 * One 32-bit seed from several integers (a trace's seed, a call's index, an attempt's number):
 * each attempt of each call gets a stream of its own, so a policy that makes more attempts (a
 * hedge, a retry) changes no other call's draws, and two policies replay the same trace.
 *
 * @example
 * const random = seededRandom(mixSeeds(seed, call, attempt));
 */
export function mixSeeds(...parts: number[]): number {
  let hash = 0x811c9dc5;
  for (const part of parts) hash = splitmix32((hash ^ part) >>> 0);
  return hash;
}

function splitmix32(seed: number): number {
  let z = (seed + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}
