/**
 * The onion: koa-compose's contract, except that `next()` may run again once it has settled.
 * @module
 */

import { isTrusted } from './internal/trusted.js';

/** A function `compose` accepts: a Koa-style middleware over any context. */
export type ComposableMiddleware<Context> = (
  context: Context,
  // `any`, as in Koa: a layer may return what its `next()` resolved to, or ignore it.
  // biome-ignore lint/suspicious/noExplicitAny: koa-compose's own type, so Koa middleware fits unchanged
  next: () => Promise<any>,
) => unknown;

/** What `compose` returns: runs the stack, then `next` (if given) innermost; a `Middleware` itself. */
export type ComposedMiddleware<Context> = (
  context: Context,
  next?: () => Promise<unknown>,
  // biome-ignore lint/suspicious/noExplicitAny: what Koa's composed middleware resolves to
) => Promise<any>;

/** A stack `compose` accepts: layers, and arrays of layers nested to any depth, as in Koa. */
export type ComposableStack<Context> = ReadonlyArray<
  ComposableMiddleware<Context> | ComposableStack<Context>
>;

// Nested arrays are spread, as koa-compose 4.2 does.
function flatten<Layer>(stack: ReadonlyArray<Layer | ReadonlyArray<unknown>>, into: Layer[] = []): Layer[] {
  for (const item of stack) {
    if (Array.isArray(item)) flatten(item, into);
    else into.push(item as Layer);
  }
  return into;
}

/**
 * Composes middleware into one, as koa-compose does, except that a layer may call `next()` again
 * once the previous call has settled (as `retry` does); nested arrays are flattened.
 *
 * @param middleware - The layers, outermost first.
 * @throws TypeError when `middleware` is not an array of functions.
 * @example
 * const run = compose<{ log: string[] }>([
 *   async (ctx, next) => { ctx.log.push('a'); await next(); ctx.log.push('d'); },
 *   async (ctx, next) => { ctx.log.push('b'); await next(); ctx.log.push('c'); },
 * ]);
 * await run({ log: [] });
 */
export function compose<Context>(middleware: ComposableStack<Context>): ComposedMiddleware<Context> {
  if (!Array.isArray(middleware)) throw new TypeError('Middleware stack must be an array!');
  const layers = flatten<ComposableMiddleware<Context>>(middleware);
  for (const fn of layers) {
    if (typeof fn !== 'function') throw new TypeError('Middleware must be composed of functions!');
  }
  // The library's own layers never overlap their next() calls; only the others are watched.
  const watched = layers.map((layer) => !isTrusted(layer));

  return function composed(context, last) {
    const run = (index: number): Promise<unknown> => {
      const fn = index === layers.length ? last : layers[index];
      if (fn === undefined) return Promise.resolve();
      try {
        return Promise.resolve(
          fn(context, watched[index] === false ? () => run(index + 1) : watchedNext(index)),
        );
      } catch (error) {
        return Promise.reject(error);
      }
    };
    // A `next` that refuses to run again while its previous run is still going.
    const watchedNext = (index: number) => {
      let running = false;
      const settled = () => {
        running = false;
      };
      return (): Promise<unknown> => {
        if (running) return Promise.reject(new Error('next() called multiple times'));
        running = true;
        const inner = run(index + 1);
        // Watched beside the layer, not in its way: the flag is cleared before the layer resumes.
        inner.then(settled, settled);
        return inner;
      };
    };
    return run(0);
  };
}
