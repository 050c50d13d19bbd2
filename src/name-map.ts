/**
 * A reversible map between registry names (`search.web`) and the names a provider accepts.
 * @module
 */

import { optionKeys, rejectUnknownKeys } from './internal/options.js';

/** Options for `createNameMap`. */
export interface NameMapOptions {
  /**
   * What every wire name must match (flags `g` and `y` are ignored, so tests never carry state).
   * @default /^[a-zA-Z0-9_-]+$/ (OpenAI's and Anthropic's tool-name pattern)
   */
  pattern?: RegExp;
  /** The longest wire name, in characters. @default 64 (OpenAI; Anthropic allows 128) */
  maxLength?: number;
  /**
   * Turns a registry name into its wire name; must be deterministic.
   * @default name => name.replaceAll('.', '__')
   */
  encode?: (name: string) => string;
}

const nameMapOptionKeys = optionKeys<NameMapOptions>({ pattern: true, maxLength: true, encode: true });

/** A checked, two-way map between tool names and wire names. */
export interface NameMap {
  /**
   * The wire name of a tool in this map.
   * @throws TypeError for a name the map was not built with.
   */
  wireName(toolName: string): string;
  /** The tool name behind a wire name (unknown ones come back unchanged: check `has` first). */
  toolName(wireName: string): string;
  /** Whether `wireName` is the wire name of one of the map's tools. */
  has(wireName: string): boolean;
  /** Every `[toolName, wireName]` pair, in the order the names were given. */
  entries(): IterableIterator<[toolName: string, wireName: string]>;
}

const defaultPattern = /^[a-zA-Z0-9_-]+$/;
const defaultEncode = (name: string): string => name.replaceAll('.', '__');

/**
 * Builds a reversible tool-name map and checks it at once: every wire name must match `pattern`
 * and fit `maxLength`, and no two tools may share a wire name (the `TypeError` names both).
 *
 * @param names - The registry names, e.g. `registry.list().map((t) => t.name)`.
 * @example
 * const names = createNameMap(['search.web', 'db.get_user']);
 * names.wireName('search.web');  // 'search__web'
 * names.toolName('search__web'); // 'search.web'
 * names.toolName('ghost');       // 'ghost': unknown wire names come back unchanged
 * names.has('search.web');       // false: not a wire name, so never dispatch it
 */
export function createNameMap(names: Iterable<string>, options: NameMapOptions = {}): NameMap {
  if (names === null || typeof (names as { [Symbol.iterator]?: unknown })?.[Symbol.iterator] !== 'function') {
    throw new TypeError(`createNameMap() names must be an iterable of strings, got ${String(names)}`);
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`createNameMap() options must be an object, got ${String(options)}`);
  }
  rejectUnknownKeys('createNameMap', options, nameMapOptionKeys);
  const { pattern = defaultPattern, maxLength = 64, encode = defaultEncode } = options;
  if (!(pattern instanceof RegExp)) throw new TypeError(`pattern must be a RegExp, got ${String(pattern)}`);
  if (typeof maxLength !== 'number' || !Number.isInteger(maxLength) || maxLength < 1) {
    throw new TypeError(`maxLength must be an integer >= 1, got ${String(maxLength)}`);
  }
  if (typeof encode !== 'function') throw new TypeError(`encode must be a function, got ${typeof encode}`);
  // A copy without g/y: RegExp#test with those flags remembers lastIndex between names.
  const check = new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, ''));

  const toWire = new Map<string, string>();
  const toTool = new Map<string, string>();
  for (const name of names) {
    if (typeof name !== 'string') {
      throw new TypeError(`createNameMap() names must be strings, got ${String(name)}`);
    }
    if (toWire.has(name)) continue;
    const wire = encodeName(encode, name);
    if (wire.length === 0 || wire.length > maxLength) {
      throw new TypeError(
        `Tool "${name}" maps to the wire name "${wire}" of ${wire.length} characters; the provider allows 1 to ${maxLength}`,
      );
    }
    if (!check.test(wire)) {
      throw new TypeError(
        `Tool "${name}" maps to the wire name "${wire}", which does not match ${String(pattern)}`,
      );
    }
    const other = toTool.get(wire);
    if (other !== undefined) {
      throw new TypeError(
        `Tools "${other}" and "${name}" both map to the wire name "${wire}"; rename one or pass another encode`,
      );
    }
    toWire.set(name, wire);
    toTool.set(wire, name);
  }

  return {
    wireName(toolName: string): string {
      const wire = toWire.get(toolName);
      if (wire === undefined) {
        throw new TypeError(`No tool named ${JSON.stringify(toolName)} in this name map`);
      }
      return wire;
    },
    toolName(wireName: string): string {
      return toTool.get(wireName) ?? wireName;
    },
    has(wireName: string): boolean {
      return toTool.has(wireName);
    },
    entries() {
      return toWire.entries();
    },
  };
}

function encodeName(encode: (name: string) => string, name: string): string {
  let wire: unknown;
  try {
    wire = encode(name);
  } catch (error) {
    throw new TypeError(
      `encode threw for tool "${name}": ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  if (typeof wire !== 'string') {
    throw new TypeError(`encode must return a string, got ${typeof wire} for tool "${name}"`);
  }
  return wire;
}
