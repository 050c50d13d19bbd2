/**
 * The library's own layers, which never call next() while an earlier call is running, so the
 * composer can skip the bookkeeping that catches that mistake in third-party middleware.
 * @module
 */

type AnyFunction = (...args: never[]) => unknown;

const trustedLayers = new WeakSet<AnyFunction>();

/** Marks one of the library's own layers as trusted and returns it. */
export function trusted<Layer extends AnyFunction>(layer: Layer): Layer {
  trustedLayers.add(layer);
  return layer;
}

/** Whether a layer is one of the library's own. */
export function isTrusted(layer: AnyFunction): boolean {
  return trustedLayers.has(layer);
}
