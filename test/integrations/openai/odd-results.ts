// Tools whose results are hard to render, and a tool registered only after a host was built:
// shared by every host's suite for the rules all hosts keep.

import { z } from 'zod';
import { createDispatcher, defaultStack, ToolRegistry, type DispatchEvent } from '../../../index.js';

/** A result `levels` objects deep. */
export function nested(levels: number): unknown {
  let value: unknown = { leaf: true };
  for (let i = 0; i < levels; i++) value = { next: value };
  return value;
}

/**
 * A registry of `plain.get`, `getter.get` (one field throws when read), `deep.get` (50 000 levels)
 * and `hidden.get` (a proxy whose keys cannot be listed), a dispatcher for it, what ran, and
 * `registerLater()` for `admin_wipe`, a tool no host built before it was registered offers.
 */
export function oddResultsFixture() {
  const ran: string[] = [];
  const record =
    <T>(name: string, result: () => T) =>
    () => {
      ran.push(name);
      return result();
    };
  const registry = new ToolRegistry()
    .register({
      name: 'plain.get',
      inputSchema: z.object({}),
      handler: record('plain.get', () => ({ plain: true })),
    })
    .register({
      name: 'getter.get',
      inputSchema: z.object({}),
      handler: record('getter.get', () => ({
        id: 7,
        get secret(): never {
          throw new Error('vault sealed');
        },
        tags: ['a'],
      })),
    })
    .register({
      name: 'deep.get',
      inputSchema: z.object({}),
      handler: record('deep.get', () => nested(50_000)),
    })
    .register({
      name: 'hidden.get',
      inputSchema: z.object({}),
      handler: record(
        'hidden.get',
        () =>
          new Proxy(
            {},
            {
              ownKeys: () => {
                throw new Error('keys withheld');
              },
            },
          ),
      ),
    });
  const events: DispatchEvent[] = [];
  const dispatcher = createDispatcher(defaultStack({ registry }), { onEvent: (event) => events.push(event) });
  const registerLater = () =>
    registry.register({
      name: 'admin_wipe',
      inputSchema: z.object({}),
      handler: record('admin_wipe', () => 'wiped'),
    });
  return {
    registry,
    dispatcher,
    events,
    ran,
    registerLater,
    /** What the model reads for `getter.get`. */
    getterText: '{"id":7,"secret":"[Unreadable: vault sealed]","tags":["a"]}',
    /** What the model reads for `deep.get`: the levels toJsonSafe keeps, then the marker. */
    deepText: /^\{"next":\{"next":.*"\[Too deep\]"\}+$/,
    /** What the model reads for `hidden.get`, called by `wire`. */
    hiddenText: (wire: string) =>
      new RegExp(
        `^error \\(internal, after 1 attempt\\): "${wire}" ran, but its result cannot be rendered for the model: keys withheld`,
      ),
  };
}
