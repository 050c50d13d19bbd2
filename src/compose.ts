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

// The layers of every stack compose() made, so that a stack composed inside another runs as if
// it had been written out flat: its innermost layer then sees the real next step, not a wrapper.
const composedLayers = new WeakMap<AnyFunction, readonly AnyFunction[]>();

type AnyFunction = (...args: never[]) => unknown;

/**
 * The layers of `stack`, flat: nested arrays are spread, as koa-compose 4.2 does, and a stack
 * made by `compose` is replaced by its own layers.
 */
export function flattenStack<Layer>(stack: ReadonlyArray<Layer | ReadonlyArray<unknown>>): Layer[] {
  const flat: Layer[] = [];
  const add = (items: ReadonlyArray<unknown>) => {
    for (const item of items) {
      const layers = typeof item === 'function' ? composedLayers.get(item as AnyFunction) : undefined;
      if (Array.isArray(item)) add(item);
      else if (layers !== undefined) add(layers);
      else flat.push(item as Layer);
    }
  };
  add(stack);
  return flat;
}

/**
 * Composes middleware into one, as koa-compose does, except that a layer may call `next()` again
 * once the previous call has settled (as `retry` does); nested arrays and stacks are flattened.
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
  const layers = flattenStack<ComposableMiddleware<Context>>(middleware);
  for (const fn of layers) {
    if (typeof fn !== 'function') throw new TypeError('Middleware must be composed of functions!');
  }
  // The library's own layers never overlap their next() calls; only the others are watched.
  const watched = layers.map((layer) => !isTrusted(layer));

  const composed: ComposedMiddleware<Context> = function composed(context, last) {
    const run = (index: number): Promise<unknown> => {
      const fn = index === layers.length ? last : layers[index];
      if (fn === undefined) return Promise.resolve();
      if (watched[index] === false) {
        try {
          return Promise.resolve(fn(context, () => run(index + 1)));
        } catch (error) {
          return Promise.reject(error);
        }
      }
      let running = false;
      const settled = () => {
        running = false;
      };
      const next = (): Promise<unknown> => {
        if (running) return Promise.reject(new Error('next() called multiple times'));
        running = true;
        const inner = run(index + 1);
        // Watched beside the layer, not in its way: the flag is cleared before the layer resumes.
        inner.then(settled, settled);
        return inner;
      };
      try {
        return Promise.resolve(fn(context, next));
      } catch (error) {
        return Promise.reject(error);
      }
    };
    return run(0);
  };
  composedLayers.set(composed, layers);
  return composed;
}
