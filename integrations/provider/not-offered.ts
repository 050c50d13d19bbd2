/**
 * The name a provider toolkit dispatches a call it did not offer under, so the stack answers it.
 * @module
 */

/**
 * The registry name of a call to `wire`, a name the toolkit did not offer: one no `ToolRegistry`
 * can hold (a space and parentheses are no part of a tool name), so the dispatcher's lookup
 * answers `not_found` ("No tool named" the wire name, the call's `displayName`) and every layer
 * outside it (logging, tracing, audit) sees the call. The wire name itself could be a tool the
 * registry holds but the model was never offered: one registered later, or a dotted registry
 * name that is not a wire name.
 *
 * @example
 * dispatcher.dispatch(notOfferedName('admin_wipe'), args, { displayName: 'admin_wipe' });
 */
export function notOfferedName(wire: string): string {
  return `${wire} (not offered)`;
}
