// The library's own layers, which never call next() while an earlier call is running, so the
// composer can skip the bookkeeping that catches that mistake in third-party middleware.

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
const trustedLayers = new WeakSet<Function>();

/** Marks one of the library's own layers as trusted and returns it. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export function trusted<Layer extends Function>(layer: Layer): Layer {
  trustedLayers.add(layer);
  return layer;
}

/** Whether a layer is one of the library's own. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export function isTrusted(layer: Function): boolean {
  return trustedLayers.has(layer);
}
