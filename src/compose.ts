// The onion: koa-compose's contract, except that `next()` may run again once it has settled.

import { isTrusted } from './internal/trusted.js';

/** A function `compose` accepts: a Koa-style middleware over any context. */
export type ComposableMiddleware<Context> = (
  context: Context,
  // `any`, as in Koa: a layer may return what its `next()` resolved to, or ignore it.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  next: () => Promise<any>,
) => unknown;

/** What `compose` returns: runs the stack, then `next` (if given) innermost. */
export type ComposedMiddleware<Context> = (
  context: Context,
  next?: () => Promise<unknown>,
) => Promise<unknown>;

/**
 * Composes middleware into one, as koa-compose does, with one difference: a layer may call
 * `next()` again after the previous call has settled, so a retry layer can re-run the layers
 * inside it. Calling `next()` while an earlier call is still running rejects, as in Koa.
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
export function compose<Context>(
  middleware: ReadonlyArray<ComposableMiddleware<Context>>,
): ComposedMiddleware<Context> {
  if (!Array.isArray(middleware)) throw new TypeError('Middleware stack must be an array!');
  for (const fn of middleware) {
    if (typeof fn !== 'function') throw new TypeError('Middleware must be composed of functions!');
  }
  const layers = [...middleware];
  // The library's own layers never overlap their next() calls; only the others are watched.
  const watched = layers.map((layer) => !isTrusted(layer));

  return function composed(context, last) {
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
      const next = (): Promise<unknown> => {
        if (running) return Promise.reject(new Error('next() called multiple times'));
        running = true;
        return run(index + 1).then(
          (value) => {
            running = false;
            return value;
          },
          (error: unknown) => {
            running = false;
            throw error;
          },
        );
      };
      try {
        return Promise.resolve(fn(context, next));
      } catch (error) {
        return Promise.reject(error);
      }
    };
    return run(0);
  };
}
